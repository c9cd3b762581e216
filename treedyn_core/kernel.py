"""The one decorator of every per-step compiled kernel.

`cache=True`: compiled once per installation (the first run says so).
`nogil=True`: the GUI thread keeps running while the worker computes.
`error_model="numpy"`: no per-division zero check (a zero divisor gives inf/nan,
which the step loop detects and reports with the limb's name).
fastmath without `nnan`/`ninf`: reassociation and contraction vectorise the
3×3 algebra, while the non-finite checks keep their meaning.
"""

import hashlib
from pathlib import Path

from numba import njit

_FAST = {"contract", "arcp", "reassoc", "nsz", "afn"}


def kernel(func=None, **options):
    """`@kernel` or `@kernel(inline="always")`: numba-compile a per-step function."""
    settings = dict(cache=True, nogil=True, error_model="numpy", fastmath=_FAST)
    settings.update(options)
    if func is None:
        return njit(**settings)
    return njit(**settings)(func)


def _drop_stale_cache() -> None:
    """Delete the package's numba cache when any of its kernel sources changed.

    numba checks a cached kernel against its own file only: a kernel that inlines a function
    from another module keeps its old machine code after that module changes. A hash of every
    source file, kept beside the cache, catches that (after an edit or an upgrade).
    """
    package = Path(__file__).resolve().parent
    cache = package / "__pycache__"
    digest = hashlib.sha256()
    for source in sorted(package.glob("*.py")):
        text = source.read_bytes()
        if b"@kernel" in text or b"@njit" in text:
            digest.update(source.name.encode())
            digest.update(text)
    stamp = cache / "kernels.sources.sha256"
    try:
        if stamp.exists() and stamp.read_text() == digest.hexdigest():
            return
        for stale in list(cache.glob("*.nbi")) + list(cache.glob("*.nbc")):
            stale.unlink(missing_ok=True)
        cache.mkdir(exist_ok=True)
        stamp.write_text(digest.hexdigest())
    except OSError:
        pass  # a read-only installation: numba keeps its cache elsewhere


_drop_stale_cache()
