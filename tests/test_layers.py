"""The code's arrangement (docs/design.md §9): the import contract of pyproject.toml holds, and
no module of the core or the app imports itself back through others, at module level or
inside a function."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"treedyn_core": ROOT / "treedyn_core", "treedyn_app": ROOT / "app"}


def _modules(package: str, folder: Path) -> dict[str, Path]:
    """{dotted module name: file} of every module of a package, subpackages included."""
    found = {}
    for path in sorted(folder.rglob("*.py")):
        parts = list(path.relative_to(folder).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join([package, *parts])] = path
    return found


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of `known` that module `name` imports anywhere in its text."""
    is_package = path.name == "__init__.py"
    here = name.split(".") if is_package else name.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = (".".join(here[:len(here) - node.level + 1] + ([node.module] if node.module
                                                                   else []))
                    if node.level else node.module)
            # `from package import module` imports the module; `from module import name` not
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in known:   # a name inside a module: the module
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def _graph() -> dict[str, set[str]]:
    modules = {name: path for package, folder in PACKAGES.items()
               for name, path in _modules(package, folder).items()}
    known = set(modules)
    # A package's __init__ is not an edge to its modules' siblings: `import treedyn_core.x`
    # runs treedyn_core/__init__.py, which imports nothing of the package at module level.
    return {name: {target for target in _imports(name, path, known)
                   if target not in PACKAGES} for name, path in modules.items()}


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert import_cycles(graph) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_function_level_and_relative_imports():
    graph = _graph()
    # cli imports the API's module inside its commands, and `from .x import y` is resolved
    assert "treedyn_core.api" in graph["treedyn_core.cli"]
    assert "treedyn_core.numerics.kernel" in graph["treedyn_core.dynamics.articulated"]
    assert "treedyn_app.main_window" in graph["treedyn_app.main"]   # inside main.run


def test_no_import_cycles_in_the_core_or_the_app():
    assert import_cycles(_graph()) == []


def test_the_import_contract_holds():
    """pyproject.toml's [tool.importlinter]: the core's layers, and no GUI in the core."""
    code = ("import sys; from importlinter.cli import lint_imports; "
            "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True, "
            "no_logo=True))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "Contracts: 2 kept, 0 broken." in done.stdout


def test_the_design_names_every_module():
    """docs/design.md §9 lists every module of the core and of the app."""
    design = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    section = design[design.index("## 9. Package layout"):design.index("## 10.")]
    missing = [str(path.relative_to(ROOT)) for folder in PACKAGES.values()
               for path in sorted(folder.rglob("*.py"))
               if path.name != "__init__.py" or path.parent in PACKAGES.values()
               if f"{path.name}`" not in section and f"{path.parent.name}/{path.name}" not in section]
    assert not missing, f"docs/design.md §9 does not name: {missing}"
