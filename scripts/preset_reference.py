"""Print the preset format reference (Markdown) from `treedyn_core.model.schema`: the tables of
docs/design.md §6.2, which `tests/test_docs.py` checks against it.

    python scripts/preset_reference.py > /tmp/reference.md
"""

from treedyn_core.model import schema


def _default(field: schema.Field) -> str:
    if field.default is schema.REQUIRED:
        return "required"
    if field.default is None:
        return "null"
    if isinstance(field.default, float):
        return f"{field.default:.10g}"
    return str(field.default).replace("'", "")


def _range(field: schema.Field) -> str:
    parts = []
    if field.min is not None:
        parts.append(f"{'>' if field.min_open else '≥'} {field.min:g}")
    if field.max is not None:
        parts.append(f"{'<' if field.max_open else '≤'} {field.max:g}")
    if field.choices:
        parts.append(" / ".join(field.choices))
    return ", ".join(parts)


def _rows(table: dict, prefix: str):
    for key, field in table.items():
        path = f"{prefix}{key}"
        if isinstance(field, dict):
            yield from _rows(field, f"{path}.")
        else:
            doc = field.doc.replace("|", r"\|")  # a bare | would end the table cell
            yield f"| `{path}` | {_default(field)} | {field.unit} | {_range(field)} | {doc} |"


def reference() -> str:
    """The body of docs/design.md §6.2: a table per section of the schema."""
    header = "| key | default | unit | range | meaning |\n|---|---|---|---|---|"
    sections = [("", schema.PRESET), ("Each entry of `tree.limbs`:", schema.LIMB),
                ("Each entry of `initial_state`:", schema.INITIAL_STATE_ENTRY)]
    parts = []
    for title, table in sections:
        parts.append((f"{title}\n\n" if title else "") + header + "\n" +
                     "\n".join(_rows(table, "")) + "\n")
    return "\n".join(parts)


def main() -> None:
    print(reference(), end="")


if __name__ == "__main__":
    main()
