"""The first-run notice: announced only when the enclosed work is slow, once, to stderr or to
the listeners (the app's status line)."""

import time

from treedyn_core import compile_notice


def test_slow_work_is_announced_on_stderr(capsys):
    with compile_notice.announce_if_slow(delay=0.05):
        time.sleep(0.3)
    assert capsys.readouterr().err == f"treedyn: {compile_notice.MESSAGE}\n"


def test_fast_work_is_not_announced(capsys):
    with compile_notice.announce_if_slow(delay=0.5):
        pass
    time.sleep(0.6)
    assert capsys.readouterr().err == ""


def test_listeners_replace_stderr(capsys):
    heard = []
    compile_notice.add_listener(heard.append)
    try:
        with compile_notice.announce_if_slow(delay=0.05):
            time.sleep(0.3)
    finally:
        compile_notice.remove_listener(heard.append)
    assert heard == [compile_notice.MESSAGE]
    assert capsys.readouterr().err == ""
