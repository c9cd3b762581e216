"""Output files written whole or not at all: checked before the work, written to a
temporary file in the same folder, renamed into place (a rename within a folder is atomic).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable

from .errors import TreedynError


def check_output(path: str | os.PathLike, suffixes: tuple[str, ...], what: str) -> Path:
    """`path` as a Path, or TreedynError (one line) when it cannot be written: a suffix not
    in `suffixes` (lower case, with the dot), a missing folder, a folder we may not write."""
    path = Path(path)
    if path.suffix.lower() not in suffixes:
        raise TreedynError(f"{what} must name a {' or '.join(suffixes)} file, got '{path}'")
    folder = path.parent
    if not folder.is_dir():
        raise TreedynError(f"cannot write {path}: folder {folder} does not exist")
    if path.is_dir():
        raise TreedynError(f"cannot write {path}: it is a folder")
    # Try it: permission bits alone do not tell (root ignores them; read-only mounts, /proc).
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError:
        raise TreedynError(f"cannot write {path}: folder {folder} is not writable") from None
    return path


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# Read once: os.umask can only be read by setting it, which is not safe once threads run.
_FILE_MODE = 0o666 & ~_umask()


def temporary_beside(path: Path) -> str:
    """A new empty file in `path`'s folder, hidden, with `path`'s suffix (for writers that go
    by it) and the permissions a newly created `path` would get (mkstemp's are 0600)."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.",
                                         suffix=f".tmp{path.suffix}")
    os.close(handle)
    os.chmod(temporary, _FILE_MODE)
    return temporary


def write_atomically(path: Path, write: Callable[[str], None]) -> None:
    """Call write(temporary_name) for a temporary file beside `path` (`temporary_beside`),
    then rename it to `path`; on any failure, or an interruption, remove it and leave `path`
    as it was."""
    temporary = temporary_beside(path)
    try:
        write(temporary)
        os.replace(temporary, path)
    except BaseException as error:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise TreedynError(f"cannot write {path}: {error.strerror or error}") from None
        raise
