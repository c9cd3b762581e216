"""The one decorator of every per-step compiled kernel, and where the compiled kernels are kept.

`cache=True`: compiled once per installation (the first run says so), kept in the user's cache
folder (`cache_folder`), never inside the installed package: files pip does not own would stay
behind in site-packages after an uninstall, and a `treedyn_core/__pycache__` left there hides
an editable install of the same name (Python takes the folder for a namespace package).
`nogil=True`: the GUI thread keeps running while the worker computes.
`error_model="numpy"`: no per-division zero check (a zero divisor gives inf/nan,
which the step loop detects and reports with the limb's name).
fastmath without `nnan`/`ninf`: reassociation and contraction vectorise the
3×3 algebra, while the non-finite checks keep their meaning.

numba reads its cache folder (`numba.config.CACHE_DIR`) when a function is decorated: `kernel`
and `njit` here set it for the decoration only, so numba code of other packages keeps its own
cache. Under that folder numba keeps one subfolder per source folder (named after the folder
and a hash of its path): clones and installations of treedyn share the user's cache without
sharing kernels.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

import numba
from numba import njit as numba_njit
from numba.core.caching import UserProvidedCacheLocator

from ..errors import TreedynError
from ..output_file import write_text_atomically

_FAST = {"contract", "arcp", "reassoc", "nsz", "afn"}
PACKAGE = Path(__file__).resolve().parent.parent   # treedyn_core/
STAMP = "kernels.sources.sha256"


def cache_folder() -> Path:
    """The user's folder for treedyn's compiled kernels: ``TREEDYN_CACHE_DIR`` if set, else
    the platform's per-user cache folder (Linux: ``$XDG_CACHE_HOME/treedyn`` or
    ``~/.cache/treedyn``; macOS: ``~/Library/Caches/treedyn``; Windows:
    ``%LOCALAPPDATA%\\treedyn\\cache``)."""
    chosen = os.environ.get("TREEDYN_CACHE_DIR")
    if chosen:
        return Path(chosen).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "treedyn"
    if sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(local) / "treedyn" / "cache"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache") / "treedyn"


def _defines_kernels(source: Path) -> bool:
    text = source.read_bytes()
    return b"@kernel" in text or b"@njit" in text


def kernel_sources() -> list[Path]:
    """Every source file of the package, subpackages included, that defines compiled kernels."""
    return [source for source in sorted(PACKAGE.rglob("*.py")) if _defines_kernels(source)]


def package_cache_folder(source_folder: Path | None = None) -> Path:
    """The subfolder of `cache_folder` where numba keeps the kernels of the modules in
    `source_folder` (numba keeps one per source folder); by default `numerics`', which also
    holds the cache's stamps (the sources' digest, the warm-up's marks)."""
    folder = Path(__file__).resolve().parent if source_folder is None else source_folder
    return cache_folder() / UserProvidedCacheLocator.get_suitable_cache_subpath(
        str(folder / "kernel.py"))


def package_cache_folders() -> list[Path]:
    """The cache subfolder of every source folder of the package that defines kernels."""
    return [package_cache_folder(folder)
            for folder in sorted({source.parent for source in kernel_sources()})]


def sources_digest() -> str:
    """sha256 of every source file of the package that defines compiled kernels."""
    digest = hashlib.sha256()
    for source in kernel_sources():
        digest.update(source.relative_to(PACKAGE).as_posix().encode())
        digest.update(source.read_bytes())
    return digest.hexdigest()


def _cache_folder_writable() -> bool:
    """Whether `cache_folder` can hold the kernels; if not, a one-line notice, and the kernels
    compile on every start rather than being cached anywhere else."""
    folder = cache_folder()
    try:
        package = package_cache_folder()
        package.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=package).close()
        return True
    except OSError as exc:
        print(f"treedyn: cannot write the kernel cache in {folder} ({exc.strerror}); the "
              f"kernels will compile on every start (set TREEDYN_CACHE_DIR to a writable "
              f"folder)", file=sys.stderr)
        return False


CACHING = _cache_folder_writable()


def njit(func=None, **options):
    """numba's `njit`, whose ``cache=True`` keeps the machine code in `cache_folder`."""
    if not CACHING:
        options["cache"] = False

    def decorate(function):
        saved = numba.config.CACHE_DIR
        numba.config.CACHE_DIR = str(cache_folder())
        try:
            return numba_njit(**options)(function)
        finally:
            numba.config.CACHE_DIR = saved

    return decorate if func is None else decorate(func)


KERNEL_OPTIONS = dict(cache=True, nogil=True, error_model="numpy", fastmath=_FAST)


def kernel(func=None, *, allocates: bool = True, **options):
    """`@kernel` or `@kernel(inline="always")`: numba-compile a per-step function.

    ``allocates=False``, for the step's stages, which only read and write arrays they are
    given: compiled without numba's reference counting (its NRT), so that a call does not
    increment and decrement the count of every array in the records it is handed (the model
    and work arrays, 50–70 arrays: a 10-limb implicit step took 7.5 µs with it, 6.1 µs
    without, docs/performance.md). Such a kernel cannot make an array (numba refuses to
    compile it); views are fine."""
    if not allocates:
        options["_nrt"] = False
    return njit(func, **{**KERNEL_OPTIONS, **options})


def _drop_stale_cache() -> None:
    """Delete the package's cached kernels, in every subpackage's cache folder, when any of
    its kernel sources changed.

    numba checks a cached kernel against its own file only: a kernel that inlines a function
    from another module keeps its old machine code after that module changes. A hash of every
    source file, kept beside the cache, catches that (after an edit or an upgrade).
    """
    folder = package_cache_folder()
    stamp = folder / STAMP
    digest = sources_digest()
    try:
        if stamp.exists() and stamp.read_text() == digest:
            return
        for cached in package_cache_folders():
            for stale in list(cached.glob("*.nbi")) + list(cached.glob("*.nbc")):
                stale.unlink(missing_ok=True)
        write_text_atomically(stamp, digest)
    except (OSError, TreedynError):
        pass  # another process replaced it meanwhile, or the folder went away: numba copes


if CACHING:
    _drop_stale_cache()
