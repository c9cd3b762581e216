"""No module of treedyn_core or the app reaches into another's private names: what one
module uses of another has a public name (a leading underscore means "this module only")."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("treedyn_core", "app")
# Private names of other libraries, on purpose: NamedTuple's public `_fields` and `_replace`,
# the standard library's `os._exit`, and vispy's backend hooks that app/gl_window.py replaces.
ALLOWED = {"_fields", "_replace", "_exit", "_backend_module", "_set_config"}


def _private_uses(path: Path) -> list[str]:
    where = path.relative_to(ROOT)
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.level > 0 or (node.module or "").startswith(
                ("treedyn_core", "treedyn_app"))):
            found += [f"{where}:{node.lineno}: from {'.' * node.level}{node.module or ''} "
                      f"import {alias.name}" for alias in node.names if _private(alias.name)]
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in ALLOWED


def test_no_module_uses_another_modules_private_names():
    uses = [use for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
            for use in _private_uses(path)]
    assert not uses, "private names used across modules:\n" + "\n".join(uses)
