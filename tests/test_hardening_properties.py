"""A property: `treedyn run` with any `--set` value at the schema's edges (its bounds, just
beyond them, 0, ±huge, subnormal, inf, nan, the wrong type) ends with status 0, 2 or 3 and at
most one line on stderr (at status 0: none, or the notice that the run starts from rest); no
exception ever escapes `main`."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from treedyn_core.model import schema
from treedyn_core.cli import main


def _leaves(table: dict, path: str):
    for key, spec in table.items():
        if isinstance(spec, dict):
            if spec is not schema.TREE:
                yield from _leaves(spec, f"{path}{key}.")
        elif spec.kind in ("float", "int", "vec3", "float_or_vec3", "int_or_list"):
            yield f"{path}{key}", spec


# (preset, key, spec): the generator's keys on a generated tree, a limb's on an explicit one.
KEYS = ([("two_limbs", key, spec) for key, spec in _leaves(schema.PRESET, "")] +
        [("sapling", key, spec) for key, spec in _leaves(schema.GENERATOR, "tree.generator.")] +
        [("two_limbs", key, spec) for key, spec in _leaves(schema.LIMB, "tree.limbs[1].")] +
        [("two_limbs", key, spec) for key, spec in _leaves(schema.INITIAL_STATE_ENTRY,
                                                            "initial_state[0].")])


def _edges(spec) -> list:
    """Numbers at and around the bounds of `spec`, and the ones that break arithmetic."""
    values = [0, -0.0, 1, -1, 1e308, -1e308, 5e-324, 1e-320, 1e100, 1e-100, 2**64, -(2**64),
              math.inf, -math.inf, math.nan]
    for bound in (spec.min, spec.max):
        if bound is not None:
            values += [bound, math.nextafter(bound, math.inf), math.nextafter(bound, -math.inf),
                       bound * 10 if bound else 1e-9]
    return values


def _yaml(number) -> str:
    if isinstance(number, float) and math.isnan(number):
        return ".nan"
    if isinstance(number, float) and math.isinf(number):
        return ".inf" if number > 0 else "-.inf"
    return repr(number)


@st.composite
def assignments(draw):
    preset, key, spec = draw(st.sampled_from(KEYS))
    edge = st.sampled_from(_edges(spec)).map(_yaml)
    value = draw(st.one_of(edge, st.lists(edge, min_size=1, max_size=4).map(
        lambda items: "[" + ", ".join(items) + "]"), st.sampled_from(["x", "true", "~", "{}"])))
    return preset, f"{key}={value}"


@pytest.mark.slow
@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=assignments())
def test_no_set_value_at_the_schema_edges_escapes_main(tmp_path, capsys, case):
    preset, assignment = case
    status = main(["run", preset, "--duration", "0.05", "--set", assignment, "--out",
                   str(tmp_path / "out.npz")])
    err = capsys.readouterr().err
    # A run may start from rest when its tree cannot carry itself or the wind (a trunk 1e-100 m
    # thick, 10⁴ m² of leaves per twig): a physical outcome, told in one line, not an error.
    lines = [line for line in err.splitlines() if "compiling kernels" not in line
             and not (status == 0 and line.endswith("; the run starts from rest"))]
    assert status in (0, 2, 3), (assignment, status, err)
    assert len(lines) <= (0 if status == 0 else 1), (assignment, err)
    assert len(err.splitlines()) <= 1 + err.count("compiling kernels"), (assignment, err)
    assert "Traceback" not in err


# Every number a command takes on its command line, at the values that break arithmetic (the
# probe's categories: NaN, ±inf, negative, zero, subnormal, huge, not a number): each is
# refused before any work or gives a physical result, in one line, never a traceback. The
# options are read from the parsers themselves, so a new option or command is covered.
EDGE_NUMBERS = ["nan", "inf", "-inf", "-1", "0", "5e-324", "1e308", "x", ""]
# What each command needs besides the option under test: its positional arguments and
# required options, chosen so that a legal value either finishes at once (a 0.05 s run of
# two_limbs) or is refused after the numbers for another reason (a study file that does not
# exist, a film into a folder that does not exist).
BASES = {
    "run": ["two_limbs", "--duration", "0.05", "--out", "{tmp}/o.npz"],
    "modes": ["two_limbs"],
    "pull": ["two_limbs", "--height", "0.5"],
    "export": ["{tmp}/run.npz", "{tmp}/o.glb"],
    "render": ["two_limbs", "--duration", "0.05", "--out", "{tmp}/missing/o.mp4"],
    "study": ["{tmp}/missing.yaml"],
    "bench": ["performance", "--sizes", "10"],
    "expand": ["two_limbs", "{tmp}/o.yaml"],
    "app": ["{tmp}/missing.yaml"],
}


def _number_options():
    from treedyn_core.cli import _parsers

    for command, parser in _parsers().items():
        for action in parser._actions:
            if action.option_strings and action.type is not None and action.nargs is None:
                yield command, action.option_strings[-1]


NUMBER_OPTIONS = sorted(set(_number_options()))


def test_every_command_is_in_the_table():
    from treedyn_core.cli import _parsers

    assert set(_parsers()) == set(BASES)


@pytest.mark.parametrize("command, option", NUMBER_OPTIONS)
def test_no_number_on_the_command_line_escapes_main(tmp_path, capsys, command, option):
    if command == "export":
        assert main(["run", "two_limbs", "--duration", "0.1", "--out",
                     str(tmp_path / "run.npz")]) == 0
    base = [part.format(tmp=tmp_path) for part in BASES[command]]
    for value in EDGE_NUMBERS:
        args = ([] if command == "app" else [command]) + base
        if option in args:   # the base's own value is the one replaced
            index = args.index(option)
            args = args[:index] + args[index + 2:]
        capsys.readouterr()
        status = main(args + [option, value])
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if "compiling kernels" not in line
                 and not line.endswith("; the run starts from rest")]
        assert status in (0, 2, 3), (args, value, status, err)
        assert len(lines) <= (0 if status == 0 else 1), (args, value, err)
        assert "Traceback" not in err
