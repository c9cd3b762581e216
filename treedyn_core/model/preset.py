"""Preset files (docs/design.md §6): load, validate against `schema`, fill defaults, save.

A preset is read in two passes. `_Reader` turns the composed YAML node tree
into plain Python values and records the line of every key (the ``marks``);
`validate` then checks the values against the tables of `schema` and fills
the defaults. Every problem is a `PresetError` whose one-line message names
the file, the line where known and the key path::

    oak.yaml:14: tree.limbs[3].length: must be > 0 m, got -1

Key paths are dotted, with list indices: ``wind.speed``,
``tree.limbs[3].length``, ``initial_state[0].limb``.
"""

from __future__ import annotations

import copy
import difflib
import errno
import math
import os
import re
import stat
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, NoReturn

import yaml

from ..errors import PresetError
from ..output_file import write_atomically
from . import schema, species
from .qsm_read import SCAN_SUFFIXES
from .schema import FORMAT_VERSION, Field

HEADER = f"# treedyn preset, format version {FORMAT_VERSION}\n"

# Largest preset file read, bytes: an expanded preset of 250,000 limbs takes ~60 MB.
MAX_PRESET_BYTES = 256 * 2**20
# Largest number of YAML nodes a document may stand for once its aliases are expanded, beyond
# the nodes written out: a "billion laughs" document (aliases of aliases) is refused before
# it is expanded. An expanded preset of 250,000 limbs has ~15 M nodes, all written out.
MAX_ALIAS_NODES = 1_000_000
# Deepest nesting of YAML collections: a preset needs 5 levels (tree.limbs[i].inertia).
MAX_NESTING = 64
# Longest wall time reading and parsing one preset file may take, s: a slow or stalled source
# (a network mount) ends the command instead of hanging it. An expanded giant (10,926 limbs,
# 6.4 MB) takes 5 s on a quiet two-core machine and 30 s with five processes sharing it.
MAX_PRESET_SECONDS = 60.0
# Bytes read at a time between two looks at that limit.
READ_CHUNK_BYTES = 2**20

# Vectors that are normalised (a limb's direction) must be at least this long.
MIN_VECTOR_LENGTH = 1e-100

# An inertia whose largest principal moment exceeds the sum of the other two
# by more than round-off is not a rigid body's.
TRIANGLE_RTOL = 1e-12

_ITEM_TABLES = {"limbs": schema.LIMB, "initial_state": schema.INITIAL_STATE_ENTRY}
_KEY_PART = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[(\d+)\])?")
_LINE_BREAKS = re.compile(r"[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]+")
# Characters YAML does not allow in a stream (PyYAML's Reader.NON_PRINTABLE).
_NON_PRINTABLE = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# YAML 1.1 reads 1e10 (no dot) as text; moduli are naturally written so.
_EXPONENT_FLOAT = re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")
_NO_WRAP = 10**9  # emitter line width: one limb per line, however long
_PLAIN_TAGS = frozenset(f"tag:yaml.org,2002:{kind}" for kind in ("str", "int", "float", "bool",
                                                                 "null"))


class ReadDeadline:
    """The wall-time limit (`MAX_PRESET_SECONDS`, read when the clock starts) of reading and
    parsing one file; `check` raises a one-line PresetError once it has passed."""

    def __init__(self, filename: str):
        self.filename = filename
        self.seconds = MAX_PRESET_SECONDS
        self._end = time.monotonic() + self.seconds

    def check(self) -> None:
        if time.monotonic() > self._end:
            raise PresetError(_one_line(
                f"{self.filename}: reading and parsing took more than {self.seconds:g} s, the "
                f"limit for a file (a slow or stalled source?)"))


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """YAML safe loader that also reads ``1e10`` as a float, and checks `deadline` (when set)
    at every node it composes: the C composer calls `resolve` for each untagged node."""

    deadline: ReadDeadline | None = None

    def resolve(self, kind, value, implicit):
        if self.deadline is not None:
            self.deadline.check()
        return super().resolve(kind, value, implicit)


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):
    """YAML safe dumper that quotes strings `_Loader` would read as numbers."""


for _cls in (_Loader, _Dumper):
    _cls.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+0123456789"))


class _FlowList(list):
    """A list written in flow style: ``[0.0, 0.0, 1.0]``."""


class _FlowMap(dict):
    """A mapping written on one line: ``{name: B, parent: A, ...}``."""


_Dumper.add_representer(
    _FlowList, lambda dumper, v: dumper.represent_sequence("tag:yaml.org,2002:seq", v,
                                                           flow_style=True))
_Dumper.add_representer(
    _FlowMap, lambda dumper, v: dumper.represent_mapping("tag:yaml.org,2002:map", v,
                                                         flow_style=True))


# --------------------------------------------------------------------------- errors

def _one_line(text: str) -> str:
    """`text` with every line break replaced by a space."""
    return _LINE_BREAKS.sub(" ", text)


def _format(source: str, line: int | None, key_path: str, message: str) -> str:
    """``SOURCE:LINE: KEYPATH: message``, leaving out the parts that are unknown."""
    parts = [f"{source}:{line}" if line else source]
    if key_path:
        parts.append(key_path)
    parts.append(message)
    return _one_line(": ".join(parts))


def _parent_path(key_path: str) -> str:
    """``tree.limbs[3].length`` → ``tree.limbs[3]`` → ``tree.limbs`` → ``tree`` → ``""``."""
    return re.sub(r"(?:\[\d+\]|\.?[^.\[]*)$", "", key_path, count=1)


def _line_of(marks: dict[str, int], key_path: str) -> int | None:
    """The line of `key_path`, or of its nearest ancestor read from the file."""
    while key_path:
        if key_path in marks:
            return marks[key_path]
        shorter = _parent_path(key_path)
        if shorter == key_path:
            return None
        key_path = shorter
    return None


def error_at_key(source: str, marks: dict[str, int], key_path: str,
                 message: str) -> PresetError:
    """A `PresetError` pointing at the line of `key_path` (or of its mapping)."""
    return PresetError(_format(source, _line_of(marks, key_path), key_path, message))


def _show(value: Any) -> str:
    """`value` as the user wrote it, in YAML words, shortened to one short line."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if value != value else (".inf" if value > 0 else "-.inf")
    if isinstance(value, dict):
        return "a mapping"
    text = "[" + ", ".join(map(_show, value)) + "]" if isinstance(value, list) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _join(path: str, key: str) -> str:
    """The key path of `key` inside the mapping at `path` (an odd key is quoted)."""
    name = key if key.isidentifier() else repr(key)
    return f"{path}.{name}" if path else name


def _suggest(word: str, choices) -> str | None:
    """The closest of `choices` to `word`, if one is close."""
    close = difflib.get_close_matches(word, list(choices), n=1)
    return close[0] if close else None


# --------------------------------------------------------------------------- reading YAML

class _Reader:
    """Turns a composed YAML node tree into Python values, recording key lines.

    ``marks`` maps the key path of every key read to its 1-based line, and the
    path of every mapping in a list (``tree.limbs[3]``) and of every item of a
    block-style list to the line where it starts.
    """

    def __init__(self, loader: yaml.SafeLoader, filename: str):
        self.loader = loader
        self.filename = filename
        self.marks: dict[str, int] = {}
        self._open: set[int] = set()  # nodes being read: a recursive alias would loop

    def fail(self, node: yaml.Node, key_path: str, message: str) -> NoReturn:
        raise PresetError(_format(self.filename, node.start_mark.line + 1, key_path, message))

    def read(self, node: yaml.Node, path: str) -> Any:
        """The Python value of `node`, found at key path `path`."""
        if self.loader.deadline is not None:
            self.loader.deadline.check()
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node, path)
        if id(node) in self._open:
            self.fail(node, path, "a YAML alias refers to itself")
        self._open.add(id(node))
        try:
            if isinstance(node, yaml.MappingNode):
                return self._mapping(node, path)
            return self._sequence(node, path)
        finally:
            self._open.discard(id(node))

    def _mapping(self, node: yaml.MappingNode, path: str) -> dict:
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self._key(key_node, path)
            key_path = _join(path, key)
            if key in out:
                self.fail(key_node, key_path, f"duplicate key (first at line {self.marks[key_path]})")
            self.marks[key_path] = key_node.start_mark.line + 1
            out[key] = self.read(value_node, key_path)
        return out

    def _sequence(self, node: yaml.SequenceNode, path: str) -> list:
        out = []
        for i, item in enumerate(node.value):
            item_path = f"{path}[{i}]"
            if isinstance(item, yaml.MappingNode) or not node.flow_style:
                self.marks[item_path] = item.start_mark.line + 1
            out.append(self.read(item, item_path))
        return out

    def _key(self, node: yaml.Node, path: str) -> str:
        if node.tag == "tag:yaml.org,2002:merge":
            self.fail(node, path, "YAML merge keys (<<) are not supported")
        if not isinstance(node, yaml.ScalarNode):
            self.fail(node, path, "a key must be a name, not a list or a mapping")
        key = self._scalar(node, path)
        if not isinstance(key, str):
            self.fail(node, path, f"a key must be a name (text), got {_show(key)}")
        return key

    def _scalar(self, node: yaml.ScalarNode, path: str) -> Any:
        try:
            if node.tag in _PLAIN_TAGS:  # the common case, without construct_object's bookkeeping
                return self.loader.yaml_constructors[node.tag](self.loader, node)
            return self.loader.construct_object(node)
        except (yaml.YAMLError, ValueError, OverflowError) as exc:
            problem = getattr(exc, "problem", None) or str(exc)
            self.fail(node, path, f"cannot read the value: {problem}")


def _syntax_error(exc: yaml.YAMLError, filename: str) -> PresetError:
    """The one-line message for a YAML syntax error, at the line YAML gives."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    return PresetError(_format(filename, mark.line + 1 if mark else None, "",
                               f"YAML syntax error: {problem}"))


def _reject_unprintable(text: str, filename: str) -> None:
    """Refuse characters a YAML stream may not contain, at their line."""
    bad = _NON_PRINTABLE.search(text)
    if bad:
        line = text.count("\n", 0, bad.start()) + 1
        raise PresetError(_format(filename, line, "",
                                  f"not a text file: character {bad.group()!r} is not allowed"))


def _check_size(root: yaml.Node, filename: str, deadline: ReadDeadline | None = None) -> None:
    """Refuse a document nested deeper than `MAX_NESTING`, or whose aliases would expand it by
    more than `MAX_ALIAS_NODES` nodes (counted without expanding: each distinct node's size
    is computed once, children before parents), or that takes past `deadline`."""
    size: dict[int, int] = {}
    distinct = 0
    stack = [(root, 1, False)]
    while stack:
        if deadline is not None:
            deadline.check()
        node, depth, done = stack.pop()
        if depth > MAX_NESTING:
            raise PresetError(_format(filename, node.start_mark.line + 1, "",
                                      f"YAML nested deeper than {MAX_NESTING} levels"))
        if id(node) in size and not done:
            continue
        children = ([item for pair in node.value for item in pair]
                    if isinstance(node, yaml.MappingNode) else
                    node.value if isinstance(node, yaml.SequenceNode) else [])
        if not done:
            size[id(node)] = 0  # on the stack: an alias to it from inside is a loop
            distinct += 1
            stack.append((node, depth, True))
            stack.extend((child, depth + 1, False) for child in children if id(child) not in size)
            continue
        size[id(node)] = 1 + sum(size[id(child)] for child in children)
        if size[id(node)] - distinct > MAX_ALIAS_NODES:
            raise PresetError(_format(filename, node.start_mark.line + 1, "",
                                      f"YAML aliases would expand the document beyond "
                                      f"{MAX_ALIAS_NODES:,} more nodes"))


def read_yaml_mapping(text: str, filename: str, deadline: ReadDeadline | None = None
                      ) -> tuple[dict, dict[str, int]]:
    """The top-level mapping of `text` and the lines of its keys, parsed before `deadline`
    (by default `MAX_PRESET_SECONDS` from now)."""
    deadline = deadline or ReadDeadline(filename)
    _reject_unprintable(text, filename)
    loader = _Loader(text)
    loader.deadline = deadline
    try:
        node = loader.get_single_node()
        if node is None:
            raise PresetError(f"{filename}: empty file (no YAML content)")
        if not isinstance(node, yaml.MappingNode):
            raise PresetError(_format(filename, node.start_mark.line + 1, "",
                                      "the top level must be a mapping of keys (version, name, "
                                      "tree, ...), not a single value or a list"))
        _check_size(node, filename, deadline)
        reader = _Reader(loader, filename)
        return reader.read(node, ""), reader.marks
    except yaml.YAMLError as exc:
        raise _syntax_error(exc, filename) from None
    except RecursionError:
        raise PresetError(f"{filename}: YAML nested too deeply") from None
    finally:
        loader.dispose()


# --------------------------------------------------------------------------- validation

@dataclass(frozen=True)
class _Where:
    """Where the values being validated come from: a file (and its key lines) or an override."""

    source: str
    marks: dict[str, int]

    def fail(self, key_path: str, message: str) -> NoReturn:
        raise error_at_key(self.source, self.marks, key_path, message)


def validate(raw: dict, filename: str, marks: dict[str, int] | None = None) -> dict:
    """Check a preset read from YAML and fill its defaults.

    Parameters
    ----------
    raw : dict
        The preset as plain Python values (YAML as read, or a preset's data).
    filename : str
        Names the source in error messages (a file's base name, ``<string>``,
        or an override such as ``--set wind.speed=fast``).
    marks : dict, optional
        Key path → line, for error messages.

    Returns
    -------
    dict
        A new dict with every key of `schema.PRESET` in schema order (the tree
        keeps only the one of ``limbs``/``generator`` given); floats as float,
        vectors as lists of 3 floats, nullable keys present with None.
    """
    where = _Where(filename, marks or {})
    if not isinstance(raw, dict):
        where.fail("", f"the top level must be a mapping of keys, got {_show(raw)}")
    if "version" in raw:
        _check_version(raw["version"], where)
    raw = species.apply(raw, where.fail)  # a tree by species and size: derived keys
    data = _table(raw, schema.PRESET, "", where)
    if "limbs" in data["tree"]:
        _check_limb_tree(data["tree"]["limbs"], where)
        _check_prestress(data, where)
    _check_initial_state(data, where)
    return data


def _check_version(value: Any, where: _Where) -> None:
    """Refuse a format version this treedyn cannot read (before any other key)."""
    version = _int(value, schema.PRESET["version"], "version", where, check_range=False)
    if version != FORMAT_VERSION:
        where.fail("version", f"unsupported format version {version} "
                              f"(this treedyn reads version {FORMAT_VERSION})")


def _value(value: Any, spec: Field | dict, path: str, where: _Where) -> Any:
    """Validate `value` against a leaf or a table of the schema."""
    if spec is schema.TREE:
        return _tree(value, path, where)
    if isinstance(spec, dict):
        return _table(value, spec, path, where)
    if value is None and spec.nullable:
        return None
    return _KINDS[spec.kind](value, spec, path, where)


def _table(value: Any, table: dict, path: str, where: _Where) -> dict:
    """Validate a mapping against `table`; a null section means all defaults."""
    if value is None:
        value = {}
    if not isinstance(value, dict):
        where.fail(path, f"expected a mapping, got {_show(value)}")
    _reject_unknown(value, table, path, where)
    out = {}
    for key, spec in table.items():
        key_path = _join(path, key)
        if key in value or isinstance(spec, dict):
            out[key] = _value(value.get(key), spec, key_path, where)
        elif spec.required:
            where.fail(key_path, "missing required key")
        else:
            out[key] = copy.deepcopy(spec.default)
    return out


def _reject_unknown(value: dict, table: dict, path: str, where: _Where) -> None:
    """Refuse a key `table` does not have, suggesting the nearest one."""
    for key in value:
        if key not in table:
            near = _suggest(key, table)
            hint = f"did you mean '{near}'?" if near else "allowed: " + ", ".join(table)
            where.fail(_join(path, key), f"unknown key ({hint})")


def _tree(value: Any, path: str, where: _Where) -> dict:
    """The tree: exactly one of an explicit limb list and a generator."""
    if value is None:
        value = {}
    if not isinstance(value, dict):
        where.fail(path, f"expected a mapping, got {_show(value)}")
    _reject_unknown(value, schema.TREE, path, where)
    given = [key for key in schema.TREE if key in value]
    if len(given) != 1:
        where.fail(path, "give exactly one of 'limbs' (an explicit limb list), 'generator' "
                         "(a generated tree) and 'scan' (a scanned tree), not more"
                   if "scan" in given else
                   "give exactly one of 'limbs' (an explicit limb list) and 'generator' "
                   "(a generated tree)" + (", not both" if given else " (or 'scan', a scanned "
                                                                     "tree)"))
    if given == ["limbs"]:
        return {"limbs": _limbs(value["limbs"], _join(path, "limbs"), where)}
    if given == ["scan"]:
        return {"scan": _table(value["scan"], schema.SCAN, _join(path, "scan"), where)}
    return {"generator": _table(value["generator"], schema.GENERATOR,
                                _join(path, "generator"), where)}


# --- leaves, one function per kind of `schema.Field`

_EXPECTED = {
    "float": "a number",
    "int": "an integer",
    "bool": "true or false",
    "str": "a string",
    "vec3": "a list of 3 numbers",
    "float_or_vec3": "a number or a list of 3 numbers",
    "int_or_list": "an integer or a non-empty list of integers",
    "float_or_list": "a number or a non-empty list of numbers",
    "colour": "a colour #rrggbb",
    "initial_state": "a list of entries",
}


def _type_error(value: Any, spec: Field, path: str, where: _Where) -> NoReturn:
    expected = _EXPECTED[spec.kind] + (" or null" if spec.nullable else "")
    where.fail(path, f"expected {expected}, got {_show(value)}")


def _is_number(value: Any) -> bool:
    """An int or a float; a bool is never a number."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _bounds(spec: Field) -> str:
    """The range of `spec` in words: ``> 0 m``, ``>= 0 and <= 1``."""
    unit = f" {spec.unit}" if spec.unit else ""
    parts = []
    if spec.min is not None:
        parts.append(f"{'>' if spec.min_open else '>='} {spec.min:g}{unit}")
    if spec.max is not None:
        parts.append(f"{'<' if spec.max_open else '<='} {spec.max:g}{unit}")
    return " and ".join(parts)


def _in_range(number: float, spec: Field) -> bool:
    above = spec.min is None or (number > spec.min if spec.min_open else number >= spec.min)
    below = spec.max is None or (number < spec.max if spec.max_open else number <= spec.max)
    return above and below


def _check_range(numbers: list, shown: Any, spec: Field, path: str, where: _Where) -> None:
    """Every number of the value within the range of `spec`."""
    if not all(_in_range(x, spec) for x in numbers):
        each = "each element " if isinstance(shown, list) else ""
        where.fail(path, f"{each}must be {_bounds(spec)}, got {_show(shown)}")


def _finite_floats(numbers: list, shown: Any, path: str, where: _Where) -> list[float]:
    """`numbers` as floats, refusing nan and ±inf (and ints too large for a float)."""
    try:
        floats = [float(x) for x in numbers]
    except OverflowError:
        floats = [math.inf]
    if not all(math.isfinite(x) for x in floats):
        where.fail(path, f"must be finite, got {_show(shown)}")
    return floats


def _float(value: Any, spec: Field, path: str, where: _Where) -> float:
    if not _is_number(value):
        _type_error(value, spec, path, where)
    [number] = _finite_floats([value], value, path, where)
    _check_range([number], value, spec, path, where)
    return number


def _int(value: Any, spec: Field, path: str, where: _Where, check_range: bool = True) -> int:
    if not _is_int(value):
        _type_error(value, spec, path, where)
    if check_range:
        _check_range([value], value, spec, path, where)
    return int(value)


def _bool(value: Any, spec: Field, path: str, where: _Where) -> bool:
    if not isinstance(value, bool):
        _type_error(value, spec, path, where)
    return value


def _str(value: Any, spec: Field, path: str, where: _Where) -> str:
    if not isinstance(value, str):
        _type_error(value, spec, path, where)
    return value


def _enum(value: Any, spec: Field, path: str, where: _Where) -> str:
    if not isinstance(value, str) or value not in spec.choices:
        where.fail(path, f"must be one of {', '.join(spec.choices)}; got {_show(value)}")
    return value


def _vec3(value: Any, spec: Field, path: str, where: _Where) -> list[float]:
    if not (isinstance(value, list) and len(value) == 3 and all(map(_is_number, value))):
        _type_error(value, spec, path, where)
    vector = _finite_floats(value, value, path, where)
    _check_range(vector, value, spec, path, where)
    if spec.nonzero and not any(vector):
        where.fail(path, f"must not be the zero vector, got {_show(value)}")
    if spec.nonzero and math.hypot(*vector) < MIN_VECTOR_LENGTH:
        # Normalising a shorter vector loses it to underflow (its squares vanish).
        where.fail(path, f"must be at least {MIN_VECTOR_LENGTH:g} long, got {_show(value)}")
    return vector


def _float_or_vec3(value: Any, spec: Field, path: str, where: _Where) -> float | list[float]:
    if isinstance(value, list):
        return _vec3(value, spec, path, where)
    return _float(value, spec, path, where)


def _int_or_list(value: Any, spec: Field, path: str, where: _Where) -> int | list[int]:
    if not isinstance(value, list):
        return _int(value, spec, path, where)
    if not value or not all(map(_is_int, value)):
        _type_error(value, spec, path, where)
    _check_range(value, value, spec, path, where)
    return [int(x) for x in value]


def _colour(value: Any, spec: Field, path: str, where: _Where) -> str:
    if not (isinstance(value, str) and re.fullmatch(r"#[0-9a-fA-F]{6}", value)):
        _type_error(value, spec, path, where)
    return value


def _float_or_list(value: Any, spec: Field, path: str, where: _Where) -> float | list[float]:
    if not isinstance(value, list):
        return _float(value, spec, path, where)
    if not value or not all(map(_is_number, value)):
        _type_error(value, spec, path, where)
    numbers = _finite_floats(value, value, path, where)
    _check_range(numbers, value, spec, path, where)
    return numbers


def _limbs(value: Any, path: str, where: _Where) -> list[dict]:
    """The explicit limbs (null is refused too: `_tree` has checked that they are given)."""
    if not isinstance(value, list) or not value:
        where.fail(path, f"expected a non-empty list of limbs, got {_show(value)}")
    return [_limb(item, f"{path}[{i}]", where) for i, item in enumerate(value)]


def _limb(value: Any, path: str, where: _Where) -> dict:
    """One limb: its keys, and an inertia a rigid body can have."""
    if not isinstance(value, dict):
        where.fail(path, f"expected a mapping (one limb), got {_show(value)}")
    limb = _table(value, schema.LIMB, path, where)
    _check_inertia(limb["inertia"], _join(path, "inertia"), where)
    return limb


def _check_inertia(inertia: list[float] | None, path: str, where: _Where) -> None:
    """Each principal moment at most the sum of the other two (triangle inequality)."""
    if inertia is None:
        return
    for i in range(3):
        others = inertia[(i + 1) % 3] + inertia[(i + 2) % 3]
        if inertia[i] > others * (1.0 + TRIANGLE_RTOL):
            where.fail(path, "principal moments must satisfy the triangle inequality (each at "
                             f"most the sum of the other two), got {_show(inertia)}")


def _initial_state(value: Any, spec: Field, path: str, where: _Where) -> list[dict]:
    if not isinstance(value, list):
        _type_error(value, spec, path, where)
    entries = []
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            where.fail(f"{path}[{i}]", f"expected a mapping (one entry), got {_show(item)}")
        entries.append(_table(item, schema.INITIAL_STATE_ENTRY, f"{path}[{i}]", where))
    return entries


_KINDS = {
    "float": _float,
    "int": _int,
    "bool": _bool,
    "str": _str,
    "enum": _enum,
    "vec3": _vec3,
    "float_or_vec3": _float_or_vec3,
    "int_or_list": _int_or_list,
    "float_or_list": _float_or_list,
    "colour": _colour,
    "initial_state": _initial_state,
}


# --- checks across keys

def _check_limb_tree(limbs: list[dict], where: _Where) -> None:
    """Unique names, existing parents, one root, no cycles."""
    index = _limb_index(limbs, where)
    parents = [_parent_index(limb, i, index, where) for i, limb in enumerate(limbs)]
    _check_one_root(limbs, parents, where)
    _check_acyclic(limbs, parents, where)


def _limb_index(limbs: list[dict], where: _Where) -> dict[str, int]:
    """Limb name → position in the list, refusing duplicate names."""
    index: dict[str, int] = {}
    for i, limb in enumerate(limbs):
        name = limb["name"]
        if name in index:
            where.fail(f"tree.limbs[{i}].name",
                       f"duplicate limb name {name!r} (also tree.limbs[{index[name]}])")
        index[name] = i
    return index


def _no_such_limb(name: str, index: dict[str, int]) -> str:
    near = _suggest(name, index)
    return f"no limb named {name!r}" + (f" (did you mean {near!r}?)" if near else "")


def _parent_index(limb: dict, i: int, index: dict[str, int], where: _Where) -> int | None:
    """Position of the parent of limb `i`, None for a root."""
    parent = limb["parent"]
    if parent is None:
        return None
    if parent not in index:
        where.fail(f"tree.limbs[{i}].parent", _no_such_limb(parent, index))
    return index[parent]


def _check_one_root(limbs: list[dict], parents: list[int | None], where: _Where) -> None:
    roots = [i for i, parent in enumerate(parents) if parent is None]
    if not roots:
        where.fail("tree.limbs", "no root limb: exactly one limb must have parent: null")
    if len(roots) > 1:
        names = ", ".join(repr(limbs[i]["name"]) for i in roots)
        where.fail(f"tree.limbs[{roots[1]}].parent",
                   f"{len(roots)} root limbs ({names}): exactly one limb may have parent: null")


def _check_acyclic(limbs: list[dict], parents: list[int | None], where: _Where) -> None:
    """Every parent chain reaches the root (O(N): each limb is walked once)."""
    reaches_root = [False] * len(limbs)
    for start in range(len(limbs)):
        chain: list[int] = []
        on_chain: set[int] = set()
        i = start
        while i is not None and not reaches_root[i]:
            if i in on_chain:
                cycle = chain[chain.index(i):]
                first = cycle.index(min(cycle))
                cycle = cycle[first:] + cycle[:first]
                names = " -> ".join(repr(limbs[j]["name"]) for j in cycle + cycle[:1])
                where.fail(f"tree.limbs[{min(cycle)}].parent",
                           f"parent cycle {names} (no root among them)")
            chain.append(i)
            on_chain.add(i)
            i = parents[i]
        for j in chain:
            reaches_root[j] = True


def _check_initial_state(data: dict, where: _Where) -> None:
    """One entry per limb; with explicit limbs, only limbs that exist."""
    limbs = data["tree"].get("limbs")
    index = {limb["name"]: i for i, limb in enumerate(limbs)} if limbs else None
    seen: dict[str, int] = {}
    for j, entry in enumerate(data["initial_state"]):
        name, path = entry["limb"], f"initial_state[{j}].limb"
        if index is not None and name not in index:
            where.fail(path, _no_such_limb(name, index))
        if name in seen:
            where.fail(path, f"limb {name!r} already has an entry (initial_state[{seen[name]}])")
        seen[name] = j


def _check_prestress(data: dict, where: _Where) -> None:
    """With prestress, the spring rest rotations are computed, never given (docs/design.md §6)."""
    if not data["simulation"]["prestress"]:
        return
    for i, limb in enumerate(data["tree"]["limbs"]):
        if limb["spring_rest_rotation_deg"] is not None:
            where.fail(f"tree.limbs[{i}].spring_rest_rotation_deg",
                       "must be null when simulation.prestress is true (prestress computes "
                       "the spring rest rotations)")


# --------------------------------------------------------------------------- presets

@dataclass
class Preset:
    """A validated preset and where it came from.

    Attributes
    ----------
    data : dict
        The complete preset (see `validate`).
    path : Path or None
        The file it was read from.
    marks : dict
        Key path → 1-based line, for every key read from the file (and list
        items such as ``tree.limbs[3]``, see `_Reader`).
    filename : str
        Names the source in error messages: the file's base name, or ``<string>``.
    raw : dict or None
        The mapping as the file wrote it, before species and defaults were filled in (the
        recipe that Save As keeps, `recipe`); None for a preset built in code.
    """

    data: dict
    path: Path | None = None
    marks: dict[str, int] = field(default_factory=dict)
    filename: str = "<string>"
    raw: dict | None = None

    @property
    def name(self) -> str:
        return self.data["name"]

    def error(self, key_path: str, message: str) -> PresetError:
        """A `PresetError` ``FILE:LINE: KEYPATH: message`` for a later stage to raise.

        The line is that of `key_path`, or of the nearest enclosing key read
        from the file; it is left out when neither was in the file.
        """
        return error_at_key(self.filename, self.marks, key_path, message)


def parse_preset(text: str, filename: str = "<string>", path: str | os.PathLike | None = None,
                 deadline: ReadDeadline | None = None) -> Preset:
    """Read and validate a preset from YAML text, parsed before `deadline` (by default
    `MAX_PRESET_SECONDS` from now).

    A preset without ``name`` is named after its file's stem (``Untitled
    tree`` when `filename` is not a file name, such as ``<string>``).
    """
    raw, marks = read_yaml_mapping(text, filename, deadline)
    if "name" not in raw and not filename.startswith("<"):
        raw["name"] = Path(filename).stem
    folder = Path(path).parent if path is not None else None
    return Preset(validate(_scan_file_from(raw, folder), filename, marks),
                  Path(path) if path is not None else None, marks, filename, raw)


def _scan_file_from(raw: dict, folder: Path | None) -> dict:
    """`raw` with a relative ``tree.scan.file`` made absolute from `folder` (the preset's); the
    recipe keeps the path as written."""
    scan = (raw.get("tree") or {}).get("scan") if isinstance(raw.get("tree"), dict) else None
    if folder is None or not isinstance(scan, dict) or not isinstance(scan.get("file"), str) \
            or Path(scan["file"]).is_absolute():
        return raw
    return {**raw, "tree": {**raw["tree"], "scan": {**scan, "file": str(folder / scan["file"])}}}


def scan_preset(path: Path) -> Preset:
    """A scan file given where a preset is (.mat, .txt, .csv): the preset ``tree: {scan:
    {file}}`` named after it, defaults for the rest. It has no preset file of its own (path
    None: saving it asks where)."""
    raw = {"version": FORMAT_VERSION, "name": path.stem,
           "tree": {"scan": {"file": str(path.resolve())}}}
    return Preset(validate(raw, path.name), None, {}, path.name, copy.deepcopy(raw))


def load_preset(source: str | os.PathLike) -> Preset:
    """Load a preset from a file path or a shipped preset's name (``young_oak``); a scan file
    (`qsm_read.SCAN_SUFFIXES`) is loaded as the preset of that scan (`scan_preset`)."""
    path = resolve_preset(source)
    if path.suffix.lower() in SCAN_SUFFIXES:
        return scan_preset(path)
    deadline = ReadDeadline(path.name)
    return parse_preset(read_preset_text(path, deadline), path.name, path, deadline)


def read_preset_text(path: Path, deadline: ReadDeadline | None = None) -> str:
    """The text of a preset file, refusing anything but a regular file of at most
    `MAX_PRESET_BYTES` (a FIFO would block, a device never end), binary and non-UTF-8 files,
    and a read that goes on past `deadline` (by default `MAX_PRESET_SECONDS` from now; looked
    at between chunks of `READ_CHUNK_BYTES`)."""
    deadline = deadline or ReadDeadline(path.name)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise PresetError(_one_line(f"{path}: cannot read the file: {_why(exc)}")) from None
    with os.fdopen(descriptor, "rb") as stream:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise PresetError(_one_line(f"{path}: not a regular file (a device, FIFO or socket "
                                        f"cannot be a preset)"))
        if info.st_size > MAX_PRESET_BYTES:
            raise PresetError(_one_line(
                f"{path}: the file is {info.st_size / 2**20:.0f} MiB, more than a preset may be "
                f"({MAX_PRESET_BYTES // 2**20} MiB)"))
        blob = _read_chunks(stream, path, deadline)
    if len(blob) > MAX_PRESET_BYTES:
        raise PresetError(_one_line(f"{path}: the file grew beyond {MAX_PRESET_BYTES // 2**20} "
                                    f"MiB while it was read"))
    if b"\0" in blob:
        raise PresetError(f"{path.name}: not a text file (it contains NUL bytes)")
    try:
        return blob.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = blob.count(b"\n", 0, exc.start) + 1
        raise PresetError(f"{path.name}:{line}: not a UTF-8 text file "
                          f"(byte 0x{blob[exc.start]:02x})") from None


def _read_chunks(stream, path: Path, deadline: ReadDeadline) -> bytearray:
    """At most `MAX_PRESET_BYTES` + 1 bytes of `stream`, looking at `deadline` after each chunk."""
    blob = bytearray()
    while len(blob) <= MAX_PRESET_BYTES:
        deadline.check()
        try:
            chunk = stream.read(min(READ_CHUNK_BYTES, MAX_PRESET_BYTES + 1 - len(blob)))
        except OSError as exc:
            raise PresetError(_one_line(f"{path}: cannot read the file: {_why(exc)}")) from None
        if not chunk:
            break
        blob += chunk
    deadline.check()
    return blob


def _why(error: OSError) -> str:
    """An OSError in words: its strerror, naming a symbolic link loop as such."""
    if error.errno == errno.ELOOP:
        return "a loop of symbolic links"
    return error.strerror or str(error)


def _shipped_folder() -> Path:
    """The folder of the presets shipped in the ``treedyn_assets`` package (the folder assets/)."""
    return Path(str(resources.files("treedyn_assets") / "presets"))


def shipped_presets() -> dict[str, Path]:
    """Name → file of every shipped preset, sorted by name."""
    folder = _shipped_folder()
    if not folder.is_dir():
        return {}
    return dict(sorted((path.stem, path) for path in folder.glob("*.yaml")))


def resolve_preset(source: str | os.PathLike) -> Path:
    """The file a preset argument names: an existing file, else a shipped preset."""
    path = Path(source)
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PresetError(_one_line(f"{source}: cannot read the file: {_why(exc)}")) from None
    except ValueError:  # a NUL in the name
        raise PresetError(_one_line(f"{source!r}: not a file name")) from None
    if path.is_file():
        return path
    shipped = shipped_presets()
    if os.fspath(source) in shipped:
        return shipped[os.fspath(source)]
    if path.is_dir():
        raise PresetError(f"{source}: is a folder, not a preset file")
    if path.exists():
        return path
    near = _suggest(os.fspath(source), shipped)
    hint = f"did you mean '{near}'? " if near else ""
    names = ", ".join(shipped) or "none installed"
    raise PresetError(_one_line(f"{source}: no such file, and no shipped preset of that name "
                                f"({hint}shipped presets: {names})"))


# --------------------------------------------------------------------------- saving

def _styled(value: Any) -> Any:
    """`value` with lists of scalars and mappings inside lists marked for flow style."""
    if isinstance(value, dict):
        return {key: _styled(item) for key, item in value.items()}
    if not isinstance(value, list):
        return value
    if not any(isinstance(item, (list, dict)) for item in value):
        return _FlowList(value)
    return [_FlowMap(_styled(item)) if isinstance(item, dict) else _styled(item)
            for item in value]


def _write_preset(data: dict, stream) -> None:
    """Write `data` as YAML: header, block mappings, one limb per line."""
    stream.write(HEADER)
    yaml.dump(_styled(data), stream, Dumper=_Dumper, default_flow_style=False,
              sort_keys=False, allow_unicode=True, width=_NO_WRAP)


def save_preset(data: dict, path: str | os.PathLike) -> None:
    """Write a complete preset (every key, schema order) to `path`, atomically.

    A preset that does not validate is refused (PresetError); see `write_preset_file`.
    """
    write_preset_file(validate(data, Path(path).name), path)


def write_preset_file(data: dict, path: str | os.PathLike) -> None:
    """Write `data` (checked by the caller) as a preset file at `path`, atomically
    (`output_file.write_atomically`): a previous file at `path` is left as it was on any
    failure, and an OSError becomes a TreedynError naming the path."""
    def write(name: str) -> None:
        with open(name, "w", encoding="utf-8", newline="\n") as stream:
            _write_preset(data, stream)

    write_atomically(path, write, what="save the preset to")


# --------------------------------------------------------------------------- overrides

def apply_overrides(data: dict, assignments: list[str], source: str = "--set") -> dict:
    """A new validated preset with ``KEY=VALUE`` assignments applied in order.

    KEY is a key path (``wind.speed``, ``tree.generator.trunk.length``,
    ``tree.limbs[2].stiffness``); VALUE is read as YAML (``12``, ``[0, 0, 1]``,
    ``true``, ``rk4``); a mapping replaces the whole section it names. Each
    assignment is validated as it is applied, and its errors start with
    ``SOURCE KEY=VALUE`` instead of the file and line. A species tree's species, height
    and DBH make one tree together (`species.JOINT_KEYS`): a problem after one of them waits
    for the assignments after it (``species=… height=… dbh=…``, in any order) and is told,
    naming the last assignment, only if it remains after them all. A species given to a
    preset without one takes every key the species derives (`species.take_species`) but
    those assigned here. `data` is not modified.
    """
    result = validate(data, source)  # a fresh copy: validate builds new containers
    waiting = None   # the origin of the last assignment while the tree is incomplete
    assigned = set()
    for assignment in assignments:
        shown = assignment if len(assignment) <= 80 else assignment[:77] + "..."
        origin = f"{source} {shown}"
        key, equals, text = assignment.partition("=")
        if not equals:
            raise PresetError(_one_line(f"{origin}: expected KEY=VALUE, "
                                        f"e.g. {source} wind.speed=12"))
        key = key.strip()
        parts = _parse_key(key, origin)
        value = _parse_value(text, key, origin)
        generator = result["tree"].get("generator")
        if key == "tree.generator.species" and isinstance(generator, dict) \
                and generator.get("species") is None:
            result = species.take_species(result, value, assigned)
        elif key == "tree.scan.species":
            result = species.take_scan_species(result, value, assigned)
        elif key in species.SIZE_KEYS and waiting is None:
            # a new size or species: derive its keys anew (while waiting, they are gone)
            result = species.strip_derived(result)
        _assign(result, parts, value, origin)
        assigned.add(key)
        try:
            result = validate(result, origin)
            waiting = None
        except PresetError:
            if key not in species.JOINT_KEYS and waiting is None:
                raise
            waiting = origin
    if waiting is not None:
        result = validate(result, waiting)   # raises: the tree as the assignments left it
    return result


def set_key(data: dict, key: str, value: Any, source: str = "--set") -> None:
    """Set the key path `key` (``wind.speed``) of the preset dict `data` to `value` in place,
    checking the key (not the value) against the schema."""
    origin = f"{source} {key}"
    _assign(data, _parse_key(key, origin), value, origin)


def _parse_key(key: str, origin: str) -> list[tuple[str, int | None]]:
    """``tree.limbs[2].stiffness`` → ``[("tree", None), ("limbs", 2), ("stiffness", None)]``."""
    matches = [_KEY_PART.fullmatch(part) for part in key.split(".")]
    if not all(matches):
        raise PresetError(_one_line(f"{origin}: bad key {key!r} (write a key path such as "
                                    "wind.speed or tree.limbs[2].stiffness)"))
    return [(m.group(1), int(m.group(2)) if m.group(2) else None) for m in matches]


def _key_text(parts: list[tuple[str, int | None]]) -> str:
    """The inverse of `_parse_key`."""
    return ".".join(name if index is None else f"{name}[{index}]" for name, index in parts)


def _parse_value(text: str, key: str, origin: str) -> Any:
    """The YAML value of an assignment."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_size(node, f"{origin}: {key}")
        return _Reader(loader, f"{origin}: {key}").read(node, "")
    except RecursionError:
        raise PresetError(_one_line(f"{origin}: {key}: the value is nested too deeply")) from None
    except (yaml.YAMLError, ValueError) as exc:
        problem = getattr(exc, "problem", None) or str(exc)
        raise PresetError(_one_line(f"{origin}: {key}: cannot read the value as YAML: "
                                    f"{problem}")) from None
    finally:
        loader.dispose()


def _assign(data: dict, parts: list[tuple[str, int | None]], value: Any, origin: str) -> None:
    """Set the key `parts` of `data` to `value`, checking the key against the schema."""
    table, node = schema.PRESET, data
    for depth, (key, index) in enumerate(parts):
        if key not in table:
            raise _unknown_override(parts, depth, table, origin)
        spec, path = table[key], _key_text(parts[:depth] + [(key, None)])
        last = depth == len(parts) - 1
        if index is not None:
            items = _override_list(node.get(key), spec, path, index, origin)
            if last:
                items[index] = value
                return
            node, table = items[index], _ITEM_TABLES[spec.kind]
        elif last:
            node[key] = value
            return
        elif isinstance(spec, dict):
            node, table = node.setdefault(key, {}), spec
        else:
            problem = (f"is a list: give an index, e.g. {path}[0]" if spec.kind in _ITEM_TABLES
                       else "is a single value, not a section")
            raise PresetError(_one_line(f"{origin}: {path}: {problem}"))


def _override_list(items: list | None, spec: Field | dict, path: str, index: int,
                   origin: str) -> list:
    """The list an indexed key (``tree.limbs[2]``) points into, checking the index."""
    if not isinstance(spec, Field) or spec.kind not in _ITEM_TABLES:
        raise PresetError(_one_line(f"{origin}: {path}: is not a list and takes no index"))
    if items is None:
        raise PresetError(_one_line(f"{origin}: {path}: this preset has none"))
    if index >= len(items):
        raise PresetError(_one_line(f"{origin}: {path}[{index}]: no such entry "
                                    f"({path} has {len(items)})"))
    return items


def _unknown_override(parts: list[tuple[str, int | None]], depth: int, table: dict,
                      origin: str) -> PresetError:
    """``unknown key 'wind.sped' (did you mean 'wind.speed'?)``."""
    near = _suggest(parts[depth][0], table)
    if near:
        fixed = parts[:depth] + [(near, parts[depth][1])] + parts[depth + 1:]
        hint = f"did you mean '{_key_text(fixed)}'?"
    else:
        where = f"keys of {_key_text(parts[:depth])}" if depth else "top-level keys"
        hint = f"{where}: {', '.join(table)}"
    return PresetError(_one_line(f"{origin}: unknown key '{_key_text(parts)}' ({hint})"))
