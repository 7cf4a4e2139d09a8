"""``with np.errstate(...)`` inside a converted function applies when the ops inside it run."""

import warnings

import numpy as np
import pytest

import dy2st


def raises_inside(x):
    y = 1.0 / (x + 1.0)  # outside the block: the caller's settings
    with np.errstate(divide="raise"):
        z = 1.0 / x
    return y + z


def ignored_inside(x):
    with np.errstate(all="ignore"):
        y = np.log(x) / x
    return y


def nested(x):
    with np.errstate(all="raise"):
        with np.errstate(divide="ignore"):
            y = 1.0 / x
        z = np.sqrt(x)  # invalid still raises here
    return y + z


def in_a_tensor_loop(x, n):
    i = 0
    total = x * 0.0
    while i < n:
        with np.errstate(divide="raise"):
            total = total + 1.0 / (x - i)
        i += 1
    return total


def outside_only(x):
    with np.errstate(divide="raise"):
        a = x + 1.0
    return 1.0 / x, a


def test_a_raising_errstate_raises_floating_point_error_at_run_time():
    static = dy2st.to_static(raises_inside)
    np.testing.assert_array_equal(static(np.ones(2)), raises_inside(np.ones(2)))
    with pytest.raises(FloatingPointError):
        raises_inside(np.zeros(2))
    with pytest.raises(FloatingPointError):
        static(np.zeros(2))


def test_an_ignoring_errstate_silences_the_warnings():
    static = dy2st.to_static(ignored_inside)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = static(np.array([0.0, -1.0, 2.0]))
    np.testing.assert_array_equal(result, ignored_inside(np.array([0.0, -1.0, 2.0])))


def test_inner_settings_override_outer_ones():
    static = dy2st.to_static(nested)
    with np.errstate(invalid="ignore"):  # the caller's own settings do not leak in
        np.testing.assert_array_equal(static(np.array([0.0, 4.0])), nested(np.array([0.0, 4.0])))
        with pytest.raises(FloatingPointError):
            nested(np.array([-1.0]))
        with pytest.raises(FloatingPointError):
            static(np.array([-1.0]))


def test_errstate_inside_a_tensor_loop():
    static = dy2st.to_static(in_a_tensor_loop)
    x = np.array([0.5, 1.5])
    np.testing.assert_array_equal(static(x, np.int64(2)), in_a_tensor_loop(x, np.int64(2)))
    with pytest.raises(FloatingPointError):
        static(np.array([1.0, 3.0]), np.int64(2))


def test_ops_after_the_block_keep_the_callers_settings():
    static = dy2st.to_static(outside_only)
    with pytest.warns(RuntimeWarning, match="divide by zero"):
        result = static(np.zeros(2))
    assert np.isinf(result[0]).all()
    assert "np.errstate(divide='raise')" in static.executor_source(np.zeros(2))
