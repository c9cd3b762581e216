"""Output files written whole or not at all: checked before the work, written to a
temporary file in the same folder, synced, renamed into place (a rename within a folder is
atomic). Every file treedyn writes goes through `write_atomically` (or `write_together`,
`put_in_place`): outputs, presets, the kernel cache's stamps, the app's films.

A temporary file is named ``.NAME.PID-TOKEN.tmpSUFFIX`` (`temporary_name`): a process killed
mid-write (SIGKILL, a power cut) leaves it behind, and the next write in the same folder
removes every such file whose process is gone (`remove_stale_temporaries`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
from pathlib import Path
from typing import Callable

from .errors import TreedynError

_TEMPORARY = re.compile(r"^\..+\.(\d+)-[0-9a-f]{8}\.tmp(\.[A-Za-z0-9]+)?$")


def os_error_text(error: OSError) -> str:
    """An OSError as words: 'No space left on device', 'File name too long', … (its
    strerror), the file named where the error names one."""
    words = error.strerror or str(error)
    return f"{error.filename}: {words}" if error.filename else words


def check_output(path: str | os.PathLike, suffixes: tuple[str, ...], what: str) -> Path:
    """`path` as a Path, or TreedynError (one line) when it cannot be written: a suffix not
    in `suffixes` (lower case, with the dot), a missing folder, a folder we may not write."""
    path = Path(path)
    if path.suffix.lower() not in suffixes:
        raise TreedynError(f"{what} must name a {' or '.join(suffixes)} file, got '{path}'")
    check_writable(path)
    return path


def check_writable(path: str | os.PathLike) -> None:
    """Refuse, before a long piece of work, an output that could not be written: a missing
    folder, a folder at `path`, a name too long, a folder we may not write (a temporary
    file named as the write's own is made there and removed)."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    try:
        if not folder.is_dir():
            raise TreedynError(f"cannot write {path}: folder {folder} does not exist")
        if path.is_dir():
            raise TreedynError(f"cannot write {path}: it is a folder")
    except OSError as error:   # a name too long, a loop of links
        raise TreedynError(f"cannot write {path}: {error.strerror or error}") from None
    # Named before it is made, so that a signal's exception (SIGTERM, Ctrl-C) raised right
    # after the open still finds it to remove. Permission bits alone do not tell (root
    # ignores them; read-only mounts, /proc), and the name's length counts too.
    probe = folder / temporary_name(path)
    ours = True
    try:
        if len(path.name.encode()) > _name_max(folder):
            raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG))
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as error:
        ours = error.errno != errno.EEXIST   # someone else's file of that name: leave it
        if error.errno == errno.ENAMETOOLONG:
            raise TreedynError(f"cannot write {_clipped(path)}: {error.strerror}") from None
        raise TreedynError(f"cannot write {path}: folder {folder} is not writable "
                           f"({error.strerror or error})") from None
    finally:
        if ours:
            with contextlib.suppress(OSError):   # never made (a name too long, no room)
                probe.unlink()


def _clipped(path: Path) -> str:
    """A path shortened for a message: at most 80 characters of its name shown."""
    text = str(path)
    return text if len(text) <= 100 else f"{text[:60]}…{text[-20:]} ({len(text)} characters)"


def _name_max(folder: Path) -> int:
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# Read once: os.umask can only be read by setting it, which is not safe once threads run.
FILE_MODE = 0o666 & ~_umask()


# The folders (absolute) this process has named temporary files in, for
# `remove_own_temporaries`.
_FOLDERS: set[str] = set()


def temporary_name(path: Path) -> str:
    """The name of a temporary file for `path`, in its folder: hidden, with this process's
    id (for `remove_stale_temporaries` and `remove_own_temporaries`) and `path`'s suffix (for
    writers that go by it). The temporary name is kept short of the folder's name limit."""
    _FOLDERS.add(os.path.abspath(path.parent if str(path.parent) else "."))
    stem = path.name[:150]
    return f".{stem}.{os.getpid()}-{secrets.token_hex(4)}.tmp{path.suffix[:16]}"


def remove_own_temporaries() -> int:
    """Remove this process's temporary files (`temporary_name`) from every folder it named
    one in; returns how many. For a command stopped by a signal: the signal's exception can
    land inside the clean-up of the write or probe it interrupted (between a file's creation
    and its registration, or before a ``finally``'s unlink), which then leaves its file."""
    pid, removed = os.getpid(), 0
    for folder in list(_FOLDERS):
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            match = _TEMPORARY.match(entry.name)
            if match and int(match.group(1)) == pid:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
                    removed += 1
    return removed


def remove_stale_temporaries(folder: str | os.PathLike) -> int:
    """Remove the temporary files of `temporary_name`'s form in `folder` whose process is no
    longer running (a write killed by SIGKILL); returns how many. Others' files, and those
    of writes in progress, are left alone."""
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        match = _TEMPORARY.match(entry.name)
        if not match or _running(int(match.group(1))):
            continue
        with contextlib.suppress(OSError):
            os.unlink(entry.path)
            removed += 1
    return removed


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True   # someone else's process: leave its file
    return True


def temporary_beside(path: Path) -> str:
    """A new empty file in `path`'s folder (`temporary_name`) with the permissions of the file
    it will replace, else those a newly created `path` would get."""
    folder = path.parent if str(path.parent) else Path(".")
    remove_stale_temporaries(folder)
    temporary = str(folder / temporary_name(path))
    os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    os.chmod(temporary, _mode_for(path))
    return temporary


def _mode_for(path: Path) -> int:
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return FILE_MODE


def put_in_place(temporary: str, path: str | os.PathLike) -> None:
    """Sync a finished temporary file (`temporary_beside`) and rename it to `path`: for a
    writer that fills its temporary file over time (the app's film export); on failure the
    temporary file is removed and an OSError becomes a TreedynError naming `path`."""
    write_together([(path, None)], [temporary])


def write_atomically(path: str | os.PathLike, write: Callable[[str], None],
                     what: str = "write") -> None:
    """Call write(temporary_name) for a temporary file beside `path` (`temporary_beside`),
    sync it, then rename it to `path`; on any failure, or an interruption, remove it and
    leave `path` as it was. An OSError becomes a TreedynError of one line: "cannot `what`
    `path`: why"."""
    write_together([(path, write)], what=what)


def write_together(files: list[tuple[str | os.PathLike, Callable[[str], None] | None]],
                   written: list[str] | None = None, what: str = "write") -> None:
    """`write_atomically` for several files at once: every file is written and synced to
    its temporary file first, and only then are all renamed, so that a failure leaves none
    of them (and every earlier file at their paths) as it was. `written`: temporary files
    already filled for the files whose writer is None (`put_in_place`)."""
    temporaries: list[str] = []
    given = list(written or [])
    path = None
    try:
        for path, write in files:
            path = Path(path)
            if write is None:
                temporaries.append(given.pop(0))
            else:
                temporaries.append(temporary_beside(path))
                write(temporaries[-1])
            _sync(temporaries[-1])
        for (path, _), temporary in zip(files, temporaries):
            os.replace(temporary, path)
    except BaseException as error:
        for temporary in temporaries + given:
            Path(temporary).unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise TreedynError(" ".join(   # one line, whatever the path holds
                f"cannot {what} {path}: {error.strerror or error}".splitlines())) from None
        raise


def _sync(name: str) -> None:
    fd = os.open(name, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_bytes_atomically(path: str | os.PathLike, blob: bytes) -> None:
    """`blob` written to `path` by `write_atomically`."""
    write_atomically(path, lambda name: Path(name).write_bytes(blob))


def write_text_atomically(path: str | os.PathLike, text: str) -> None:
    """`text` (UTF-8, newlines as given) written to `path` by `write_atomically`."""
    def write(name: str) -> None:
        with open(name, "w", encoding="utf-8", newline="\n") as stream:
            stream.write(text)

    write_atomically(path, write)

