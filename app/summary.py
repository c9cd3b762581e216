"""A preset in two or three lines for the side panel: what tree, how big, how many limbs.

A shipped preset's description is a page of sources (citations, `backticks`, file names); the
panel shows its first sentence and the tree's size, and the whole text one click away. A preset
without a description (a species tree made with --set, a generator tree) gets one written from
its keys. Plain Python: no Qt.
"""

from __future__ import annotations

import re

SUMMARY_CHARS = 150  # about two lines of the side panel


def plain_text(text: str) -> str:
    """`text` with its markdown marks taken out (backticks, emphasis, headings, links) and its
    lines joined."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text or "")
    text = text.replace("`", "").replace("**", "")
    text = re.sub(r"(?m)^\s*#+\s*", "", text)
    text = re.sub(r"(?<![\w*])\*(?!\s)([^*]+)(?<!\s)\*(?![\w*])", r"\1", text)
    return re.sub(r"\s+", " ", text).strip()


def first_sentence(text: str, limit: int = SUMMARY_CHARS) -> str:
    """The text up to its first full stop or colon (not one inside a number) or to a comma
    before a number (the size, which the size line gives), cut at a word with … when longer
    than `limit`."""
    match = re.search(r"(?<=[a-z)\]%])([.:;](?=\s|$)|,(?=\s\d))", text)
    sentence = text[:match.start()] if match else text
    if len(sentence) > limit:
        sentence = sentence[:limit].rsplit(" ", 1)[0].rstrip(",;") + "…"
    return sentence


def _species_names(key: str) -> tuple[str, str]:
    """(common name, Latin binomial) of a species key of assets/species.yaml."""
    latin = key.replace("_x_", " × ").replace("_", " ").capitalize()
    try:
        from treedyn_core.model.species import entry

        common = entry(key).get("common_name") or ""
    except Exception:  # an unknown key: the preset's validation says so elsewhere
        common = ""
    return common, latin


def size_line(data: dict, tree=None) -> str:
    """'7.5 m tall · DBH 19 cm · 286 limbs': the size the preset gives (a species tree's
    height and DBH) or its built `tree`'s height, and the number of limbs."""
    generator = (data.get("tree") or {}).get("generator") or {}
    parts = []
    height = generator.get("height")
    if height is None and tree is not None:
        height = tree.height
    if height:
        parts.append(f"{height:.3g} m tall")
    if generator.get("dbh"):
        parts.append(f"DBH {100 * generator['dbh']:.3g} cm")
    if tree is not None:
        parts.append(f"{tree.n:,} limb{'s' if tree.n != 1 else ''}")
    return " · ".join(parts)


def summary(data: dict, tree=None) -> str:
    """Two or three lines on the preset `data` (its built `tree`, if there is one): the
    description's first sentence, or one written from the keys, then the size line."""
    description = plain_text(data.get("description") or "")
    generator = (data.get("tree") or {}).get("generator") or {}
    if description:
        head = first_sentence(description)
    elif generator.get("species"):
        common, latin = _species_names(generator["species"])
        stand = generator.get("stand")
        where = {"open": "open-grown ", "forest": "forest-grown "}.get(stand, "")
        leafless = ", leafless" if generator.get("leafless") else ""
        head = (f"A {where}{common} ({latin}){leafless}" if common
                else f"A {where}{latin}{leafless}")
    elif generator:
        levels = generator.get("levels")
        head = f"A generated tree, {levels} branching levels" if levels is not None \
            else "A generated tree"
        if generator.get("whorls"):
            head += f", {generator['whorls']} whorls"
    else:
        head = data.get("name") or "A tree of explicit limbs"
    size = size_line(data, tree)
    return f"{head}.\n{size}" if size else f"{head}."
