"""The Runge–Kutta tableau of `steppers.rk4_steps` is data: check it is a consistent
explicit method of order 4 (Butcher's order conditions up to order 4)."""

import numpy as np

from treedyn_core.integrators.steppers import (RK4_A, RK4_B, RK4_B_DENOMINATOR, RK4_B_NUMERATOR,
                                               RK4_C)


def test_rk4_tableau_is_explicit_and_consistent():
    assert np.allclose(np.triu(RK4_A), 0.0)              # explicit: A strictly lower
    np.testing.assert_allclose(RK4_C, RK4_A.sum(axis=1))
    assert RK4_B_NUMERATOR.sum() == RK4_B_DENOMINATOR      # Σ b = 1 exactly
    np.testing.assert_allclose(RK4_B, RK4_B_NUMERATOR / RK4_B_DENOMINATOR)


def test_rk4_tableau_meets_the_order_conditions_to_order_4():
    A, b, c = RK4_A, RK4_B, RK4_C
    conditions = {
        "b·c = 1/2": (b @ c, 1 / 2),
        "b·c² = 1/3": (b @ c**2, 1 / 3),
        "b·Ac = 1/6": (b @ A @ c, 1 / 6),
        "b·c³ = 1/4": (b @ c**3, 1 / 4),
        "b·(c∘Ac) = 1/8": (b @ (c * (A @ c)), 1 / 8),
        "b·Ac² = 1/12": (b @ A @ c**2, 1 / 12),
        "b·AAc = 1/24": (b @ A @ A @ c, 1 / 24),
    }
    for name, (value, expected) in conditions.items():
        assert abs(value - expected) < 1e-15, name
