"""The vectorisable exp, log and pow of `fastmath` against the C library (numpy), compiled the
way the kernels compile them (fastmath reassociation on: it must not fold the bit tricks)."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from treedyn_core.numerics.fastmath import fast_exp, fast_log, fast_pow
from treedyn_core.numerics.kernel import _FAST


def _compiled(fastmath):
    @njit(fastmath=fastmath, error_model="numpy")
    def apply(x, y, out_exp, out_log, out_pow):
        for i in range(x.shape[0]):
            out_exp[i] = fast_exp(y[i])
            out_log[i] = fast_log(x[i])
            out_pow[i] = fast_pow(x[i], y[i] / 100.0)
    return apply


@pytest.mark.parametrize("fastmath", [_FAST, True, False])
def test_exp_log_pow_against_libm(fastmath):
    rng = np.random.default_rng(11)
    x = np.concatenate([np.exp(rng.uniform(-700.0, 700.0, 200_000)),
                        2.0 ** np.arange(-1000, 1001, dtype=float),       # exact powers of 2
                        np.sqrt(2.0) * (1.0 + np.array([-1e-15, 0.0, 1e-15])),  # range split
                        np.nextafter(1.0, [0.0, 2.0]), [1.0]])
    y = rng.uniform(-700.0, 700.0, x.size)
    y[: 5] = [0.0, -0.0, 1e-300, -1e-300, 0.5]
    out_exp, out_log, out_pow = (np.empty_like(x) for _ in range(3))
    _compiled(fastmath)(x, y, out_exp, out_log, out_pow)
    assert np.all(np.abs(out_exp / np.exp(y) - 1.0) <= 4e-16 + 5e-17 * np.abs(y))
    assert np.all(np.abs(out_log - np.log(x)) <= 4e-16 * (1.0 + np.abs(np.log(x))))
    log_exact = y / 100.0 * np.log(x)
    ok = np.abs(log_exact) < 700.0
    exact = x[ok] ** (y[ok] / 100.0)
    assert np.all(np.abs(out_pow[ok] / exact - 1.0) <= 1e-15 * (1.0 + np.abs(log_exact[ok])))
    assert out_log[-1] == 0.0 and out_exp[0] == 1.0
