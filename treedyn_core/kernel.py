"""The one decorator of every per-step compiled kernel.

`cache=True`: compiled once per installation (the first run says so).
`nogil=True`: the GUI thread keeps running while the worker computes.
`error_model="numpy"`: no per-division zero check (a zero divisor gives inf/nan,
which the step loop detects and reports with the limb's name).
fastmath without `nnan`/`ninf`: reassociation and contraction vectorise the
3×3 algebra, while the non-finite checks keep their meaning.
"""

from numba import njit

_FAST = {"contract", "arcp", "reassoc", "nsz", "afn"}


def kernel(func=None, **options):
    """`@kernel` or `@kernel(inline="always")`: numba-compile a per-step function."""
    settings = dict(cache=True, nogil=True, error_model="numpy", fastmath=_FAST)
    settings.update(options)
    if func is None:
        return njit(**settings)
    return njit(**settings)(func)
