"""Errors about the NumPy surface: each names this file and the offending line, and says what to do."""

import numpy as np
import pytest
from op_harness import assert_error_at

import dy2st


def as_bool(x):
    return all([x.sum()])


def iterate(x):
    return list(x)


def unpack(x):
    first, second = x
    return first


def as_array(x):
    # numpy.testing makes arrays of its arguments and is not NumPy's array API
    return np.testing.assert_array_equal(x, x)


@pytest.mark.parametrize(
    "fn, snippet, what",
    [
        (as_bool, "all([x.sum()])", "a Python bool"),
        (iterate, "list(x)", "a Python iterable"),
        (unpack, "first, second = x", "a Python iterable"),
        (as_array, "np.testing.assert_array_equal(x, x)", "a concrete NumPy array"),
    ],
)
def test_concrete_values_of_tensors_are_refused(fn, snippet, what):
    with pytest.raises(dy2st.TensorValueError) as info:
        dy2st.to_static(fn)(np.ones(2))
    assert_error_at(info.value, fn, snippet, what, "only known when the graph runs")


def unsupported_function(x):
    return np.array2string(x)


def unsupported_attribute(x):
    return x.ptp()


def unsupported_ufunc_keyword(x):
    buffer = [0.0, 0.0]
    return np.exp(x, out=buffer)


@pytest.mark.parametrize(
    "fn, snippet, fragments",
    [
        (unsupported_function, "np.array2string(", ["np.array2string returns a Python str"]),
        (unsupported_attribute, "x.ptp()", ["ndarray attribute 'ptp' is not supported"]),
        (unsupported_ufunc_keyword, "np.exp(x, out=buffer)", ["np.exp", "out= must be an array of the function"]),
    ],
)
def test_unsupported_numpy_surface_names_itself_and_the_line(fn, snippet, fragments):
    with pytest.raises(dy2st.UnsupportedOpError) as info:
        dy2st.to_static(fn)(np.ones((2, 2)))
    assert_error_at(info.value, fn, snippet, *fragments)


def shape_mismatch(x, y):
    return x + y


def test_broadcast_mismatch_is_a_build_error_with_both_types():
    with pytest.raises(dy2st.GraphBuildError) as info:
        dy2st.to_static(shape_mismatch)(np.ones(3), np.ones(4))
    assert_error_at(info.value, shape_mismatch, "x + y", "f64[3]", "f64[4]")


def integer_overflow_at_run_time(x):
    return x // np.zeros_like(x)


def test_runtime_numpy_errors_name_the_op_and_line():
    with np.errstate(divide="raise"):
        with pytest.raises(dy2st.Dy2stRuntimeError) as info:
            dy2st.to_static(integer_overflow_at_run_time)(np.ones(3))
    assert_error_at(info.value, integer_overflow_at_run_time, "x // np.zeros_like(x)", "floor_divide")
