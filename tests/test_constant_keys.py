"""Python constants in cache keys and guards: -0.0 is not 0.0, and a NaN is the same NaN."""

from __future__ import annotations

import math

import numpy as np

import dy2st


def scaled_reciprocal(x, k):
    return 1.0 / (x * k)


def test_negative_zero_argument_builds_its_own_graph():
    static = dy2st.to_static(scaled_reciprocal, static_argnames="k")
    x = np.ones(3)
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(static(x, 0.0), scaled_reciprocal(x, 0.0))
        np.testing.assert_array_equal(static(x, -0.0), scaled_reciprocal(x, -0.0))  # -inf, not inf
    assert static.num_graphs == 2


def test_negative_zero_as_a_graph_input():
    static = dy2st.to_static(scaled_reciprocal)
    x = np.ones(3)
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(static(x, 0.0), scaled_reciprocal(x, 0.0))
        np.testing.assert_array_equal(static(x, -0.0), scaled_reciprocal(x, -0.0))  # -inf, not inf
        np.testing.assert_array_equal(static(x, 0.0), scaled_reciprocal(x, 0.0))  # the input graph
    assert static.num_graphs == 2  # 0.0 as a constant, then k an input


def test_a_nan_argument_reuses_its_graph():
    static = dy2st.to_static(scaled_reciprocal)
    x = np.ones(3)
    for _ in range(3):
        assert np.isnan(static(x, float("nan"))).all()
    assert static.num_graphs == 1


SIGN = 0.0


def with_global_sign(x):
    return 1.0 / (x * SIGN)


def test_a_global_constant_changed_to_negative_zero_rebuilds():
    global SIGN
    static = dy2st.to_static(with_global_sign)
    x = np.ones(2)
    with np.errstate(divide="ignore"):
        SIGN = 0.0
        assert (static(x) == math.inf).all()
        SIGN = -0.0
        try:
            assert (static(x) == -math.inf).all()
        finally:
            SIGN = 0.0
