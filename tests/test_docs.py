"""The documentation the code cites lives in the repository.

Every ``docs/…`` file, ``§`` section and ``#anchor`` that the code, the tests, the scripts, the
presets, the README and the docs themselves cite must exist; and nothing cites the design
notes, measurement notes or issue tracker that lived outside the repository.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CODE_FOLDERS = ("treedyn_core", "app", "tests", "scripts")
# Names of the documents outside the repository (spelled in pieces, so that this file passes
# its own scan), and issue numbers.
OUTSIDE = re.compile(r"\b(" + "DES" + "IGN|" + "FAC" + r"TS)\b|\b[Ii]ssues? #?\d+")
# "docs/design.md §4", "design.md §4.2–§4.3, §8" (the runs of sections cite the same file).
SECTION_RUN = re.compile(r"(?:docs/)?(\w+\.md)\s+§(\d+(?:\.\d+)*)"
                         r"((?:\s*(?:–|-|/|,|and)\s*§\d+(?:\.\d+)*)*)")
MORE_SECTIONS = re.compile(r"§(\d+(?:\.\d+)*)")
# A section of the same document, inside docs/ (not a book's: "RBDA §6.2").
BARE_SECTION = re.compile(r"(?<!RBDA )§(\d+(?:\.\d+)*)")
DOCS_PATH = re.compile(r"\bdocs/[\w./-]+\.(?:md|png)")
MD_LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*$", re.M)
NUMBERED = re.compile(r"^(\d+(?:\.\d+)*)\.?\s")


def _citing_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
             *sorted((ROOT / "assets").rglob("*.yaml"))]
    for folder in CODE_FOLDERS:
        files += sorted((ROOT / folder).rglob("*.py"))
    return files


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces → '-'."""
    text = re.sub(r"[`*_]", "", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _headings(doc: Path) -> tuple[set[str], set[str]]:
    """(section numbers, anchors) of a Markdown file."""
    titles = HEADING.findall(doc.read_text(encoding="utf-8"))
    numbers = {m.group(1) for m in map(NUMBERED.match, titles) if m}
    return numbers, {_slug(title) for title in titles}


def _citations(path: Path):
    """(line, kind, target) of every documentation reference in `path`; kind is 'file',
    'section' (target 'file.md §N') or 'anchor' (target 'file.md#anchor')."""
    text = path.read_text(encoding="utf-8")
    for number, line in enumerate(text.splitlines(), 1):
        for match in DOCS_PATH.finditer(line):
            yield number, "file", match.group(0)
        for match in SECTION_RUN.finditer(line):
            for section in [match.group(2), *MORE_SECTIONS.findall(match.group(3))]:
                yield number, "section", f"{match.group(1)} §{section}"
        if path.suffix != ".md":
            continue
        if path.parent.name == "docs":
            for section in BARE_SECTION.findall(SECTION_RUN.sub("", line)):
                yield number, "section", f"{path.name} §{section}"
        for target in MD_LINK.findall(line):
            if re.match(r"[a-z]+:", target):
                continue  # an external link
            file_part, _, anchor = target.partition("#")
            resolved = (path.parent / file_part).resolve() if file_part else path
            if file_part:
                yield number, "file", str(resolved.relative_to(ROOT))
            if anchor and resolved.suffix == ".md":
                yield number, "anchor", f"{resolved.relative_to(ROOT)}#{anchor}"


def test_documents_exist():
    for name in ("design.md", "performance.md"):
        numbers, _ = _headings(ROOT / "docs" / name)
        assert {"1", "2", "3"} <= numbers, name


def test_every_cited_document_section_and_anchor_exists():
    headings = {doc.name: _headings(doc) for doc in (ROOT / "docs").glob("*.md")}
    missing, count = [], 0
    for path in _citing_files():
        for line, kind, target in _citations(path):
            count += 1
            where = f"{path.relative_to(ROOT)}:{line}: {target}"
            if kind == "file":
                if not (ROOT / target).exists():
                    missing.append(where)
            elif kind == "section":
                name, section = target.split(" §")
                if section not in headings.get(name, (set(), set()))[0]:
                    missing.append(where)
            else:
                file_part, anchor = target.split("#")
                if anchor not in headings.get(Path(file_part).name, (set(), set()))[1]:
                    missing.append(where)
    assert count > 100  # the scan found the citations (the code cites the design everywhere)
    assert not missing, "cited but not in the repository:\n" + "\n".join(missing)


@pytest.mark.parametrize("text, found", [
    ("see docs/design.md §4.2 and §9", [("file", "docs/design.md"),
                                        ("section", "design.md §4.2"),
                                        ("section", "design.md §9")]),
    ("(docs/design.md §2–§4, §8)", [("file", "docs/design.md"), ("section", "design.md §2"),
                                    ("section", "design.md §4"), ("section", "design.md §8")]),
    ("performance.md §6", [("section", "performance.md §6")]),
])
def test_the_scan_reads_section_runs(tmp_path, text, found):
    path = tmp_path / "x.py"
    path.write_text(text + "\n")
    assert [(kind, target) for _, kind, target in _citations(path)] == found


def test_nothing_cites_documents_outside_the_repository():
    offenders = []
    for path in _citing_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if OUTSIDE.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_readme_stays_a_users_page():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250


def test_design_lists_every_preset_key_as_the_schema_has_it():
    """docs/design.md §6.2 holds exactly what scripts/preset_reference.py prints from the schema:
    a key added, a bound or a default changed without regenerating the tables fails here."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("preset_reference",
                                                  ROOT / "scripts" / "preset_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    design = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    start = design.index("by `python scripts/preset_reference.py`.\n\n")
    section = design[start:design.index("### 6.3 ")].split("\n\n", 1)[1]
    assert section.strip() == module.reference().strip()
