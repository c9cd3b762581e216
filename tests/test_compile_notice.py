"""The first-run notice: announced only when numba compiles and the enclosed work is slow, once,
to stderr or to the listeners (the app's status line); never for slow work that compiles
nothing (a kernel loaded from the cache on a busy machine)."""

import time

import numba
import pytest

from treedyn_core.numerics import compile_notice


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch):
    """Each test as a process that has printed nothing yet."""
    monkeypatch.setattr(compile_notice, "_printed", set())


def _compile_something():
    """Compile a new function (numba raises its compile event): returns its value."""
    @numba.njit(cache=False)
    def twice(x):
        return 2 * x
    return twice(21)


def test_slow_compiling_work_is_announced_on_stderr(capsys):
    with compile_notice.announce_if_slow(delay=0.05):
        _compile_something()
        time.sleep(0.3)
    assert capsys.readouterr().err == f"treedyn: {compile_notice.MESSAGE}\n"


def test_a_command_that_compiles_twice_says_it_once(capsys):
    """`treedyn run` on an empty cache compiles while it sets up and again at its first step."""
    for _ in range(2):
        with compile_notice.announce_if_slow(delay=0.05):
            _compile_something()
            time.sleep(0.3)
    assert capsys.readouterr().err == f"treedyn: {compile_notice.MESSAGE}\n"


def test_a_compile_that_starts_late_is_announced_when_it_starts(capsys):
    with compile_notice.announce_if_slow(delay=0.05):
        time.sleep(0.2)
        _compile_something()
    assert capsys.readouterr().err == f"treedyn: {compile_notice.MESSAGE}\n"


def test_slow_work_that_compiles_nothing_is_not_announced(capsys):
    with compile_notice.announce_if_slow(delay=0.05):
        time.sleep(0.3)
    assert capsys.readouterr().err == ""


def test_fast_work_is_not_announced(capsys):
    with compile_notice.announce_if_slow(delay=0.5):
        _compile_something()
    time.sleep(0.6)
    assert capsys.readouterr().err == ""


def test_listeners_replace_stderr(capsys):
    heard = []
    compile_notice.add_listener(heard.append)
    try:
        with compile_notice.announce_if_slow(delay=0.05):
            _compile_something()
            time.sleep(0.3)
    finally:
        compile_notice.remove_listener(heard.append)
    assert heard == [compile_notice.MESSAGE]
    assert capsys.readouterr().err == ""
