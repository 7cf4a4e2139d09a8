"""Reductions through to_static == eager NumPy, across dtypes, axes and keepdims."""

import numpy as np
import pytest
from op_harness import DTYPES, assert_equivalent, assert_error_at, sample

import dy2st

AXES = [None, 0, 1, -1, (0, 2), (2, 0, 1)]


def all_reductions(x, axis, keepdims):
    return (
        np.sum(x, axis=axis, keepdims=keepdims),
        np.mean(x, axis=axis, keepdims=keepdims),
        np.prod(x, axis=axis, keepdims=keepdims),
        np.max(x, axis=axis, keepdims=keepdims),
        np.min(x, axis=axis, keepdims=keepdims),
        np.any(x, axis=axis, keepdims=keepdims),
        np.all(x, axis=axis, keepdims=keepdims),
    )


def all_reduction_methods(x, axis, keepdims):
    return (
        x.sum(axis=axis, keepdims=keepdims),
        x.mean(axis=axis, keepdims=keepdims),
        x.prod(axis=axis, keepdims=keepdims),
        x.max(axis=axis, keepdims=keepdims),
        x.min(axis=axis, keepdims=keepdims),
        x.any(axis=axis, keepdims=keepdims),
        x.all(axis=axis, keepdims=keepdims),
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(dtype, axis, keepdims):
    x = sample((2, 3, 4), dtype)
    assert_equivalent(all_reductions, x, axis, keepdims)
    assert_equivalent(all_reduction_methods, x, axis, keepdims)


def arg_reductions(x, axis, keepdims):
    return (
        np.argmax(x, axis=axis, keepdims=keepdims),
        np.argmin(x, axis=axis, keepdims=keepdims),
        x.argmax(axis),
        x.argmin(axis=axis),
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [None, 0, -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_argmax_argmin(dtype, axis, keepdims):
    assert_equivalent(arg_reductions, sample((3, 5), dtype), axis, keepdims)


def spread(x, axis, ddof):
    return np.std(x, axis=axis, ddof=ddof), x.var(axis=axis, ddof=ddof, keepdims=True), np.var(x, correction=ddof)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_])
@pytest.mark.parametrize("axis", [None, 0, (0, 1)])
@pytest.mark.parametrize("ddof", [0, 1])
def test_std_and_var(dtype, axis, ddof):
    assert_equivalent(spread, sample((4, 3), dtype), axis, ddof)


def accumulator_dtypes(x):
    return np.sum(x, dtype=np.float32), x.mean(axis=0, dtype=np.float64), np.prod(x, 0, np.int8)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.float32])
def test_explicit_accumulator_dtype(dtype):
    assert_equivalent(accumulator_dtypes, sample((3, 2), dtype))


def positional_arguments(x):
    return np.max(x, 0, None, True), np.sum(x, 1, None, None, True), x.min(1, None, True)


def test_positional_arguments_bind_like_numpy():
    assert_equivalent(positional_arguments, sample((3, 2), np.float64))


def zero_dimensional(x):
    return x.sum(), np.max(x, axis=0), np.sum(x, axis=-1), x.mean(), np.argmax(x, axis=0)


def mean_with_axis_of_zero_dimensional(x):
    return x.mean(axis=-1)


def test_reductions_of_a_zero_dimensional_array():
    assert_equivalent(zero_dimensional, np.array(2.5))
    assert_equivalent(zero_dimensional, np.float32(2.5))


def test_zero_dimensional_axes_numpy_refuses_fail_at_build_time():
    with pytest.raises(np.exceptions.AxisError):
        np.array(2.5).mean(axis=-1)
    with pytest.raises(dy2st.GraphBuildError) as info:
        dy2st.to_static(mean_with_axis_of_zero_dimensional)(np.array(2.5))
    assert_error_at(info.value, mean_with_axis_of_zero_dimensional, "x.mean(axis=-1)", "out of bounds")


def small_integers_accumulate_wide(x):
    return x.sum(), x.prod(axis=0), x.mean(), x.max()


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.bool_, np.float16])
def test_small_dtypes_accumulate_like_numpy(dtype):
    assert_equivalent(small_integers_accumulate_wide, sample((4,), dtype))


def reduction_with_out(x):
    total = np.zeros(())
    return np.sum(x, out=total)


def reduction_with_where(x):
    return np.sum(x, where=x > 0)


def max_of_empty(x):
    return np.max(x, axis=0)


def tuple_axis_on_zero_dimensional(x):
    return np.sum(x, axis=(0,))


def test_reduction_options_the_precise_rules_leave_call_numpy_when_the_graph_runs():
    assert_equivalent(reduction_with_out, sample((3,), np.float64))
    assert_equivalent(reduction_with_where, sample((3,), np.float64))


def test_reduction_errors_match_numpy_at_build_time():
    with pytest.raises(dy2st.GraphBuildError) as info:
        dy2st.to_static(max_of_empty)(np.ones((0, 3)))
    assert_error_at(info.value, max_of_empty, "np.max(x, axis=0)", "zero-size array to reduction operation max")
    with pytest.raises(np.exceptions.AxisError):
        np.sum(np.array(1.0), axis=(0,))
    with pytest.raises(dy2st.GraphBuildError) as info:
        dy2st.to_static(tuple_axis_on_zero_dimensional)(np.array(1.0))
    assert_error_at(info.value, tuple_axis_on_zero_dimensional, "axis=(0,)", "out of bounds")


def scans(x):
    return (
        np.cumsum(x),
        np.cumsum(x, axis=0),
        x.cumsum(axis=-1),
        np.cumprod(x, axis=1),
        x.cumprod(),
        np.cumsum(x, dtype=np.float32),
    )


@pytest.mark.parametrize("dtype", DTYPES + [np.int8])
def test_cumulative_sums_and_products(dtype):
    assert_equivalent(scans, sample((3, 4), dtype))


def robust_reductions(x, axis, keepdims):
    return (
        np.median(x, axis=axis, keepdims=keepdims),
        np.ptp(x, axis=axis, keepdims=keepdims),
        np.nansum(x, axis=axis, keepdims=keepdims),
        np.nanprod(x, axis),
        np.nanmean(x, axis=axis),
        np.nanmax(x, axis=axis, keepdims=keepdims),
        np.nanmin(x, axis),
        np.nanstd(x, axis, ddof=1),
        np.nanvar(x, axis=axis),
        np.nanmedian(x, axis=axis, keepdims=keepdims),
    )


def nan_arg_reductions(x, axis):
    return np.nanargmax(x, axis=axis), np.nanargmin(x, axis, keepdims=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_median_ptp_and_nan_reductions(dtype, axis, keepdims):
    x = sample((3, 4), dtype)
    if dtype in (np.float32, np.float64):
        x[0, 1] = x[2, 3] = np.nan
    assert_equivalent(robust_reductions, x, axis, keepdims)
    if not isinstance(axis, tuple):
        assert_equivalent(nan_arg_reductions, x, axis)


def ptp_of_empty(x):
    return np.ptp(x, axis=0)


def test_empty_reductions_without_identity_fail_like_numpy():
    with pytest.raises(dy2st.GraphBuildError) as info:
        dy2st.to_static(ptp_of_empty)(np.ones((0, 2)))
    assert_error_at(info.value, ptp_of_empty, "np.ptp(x, axis=0)", "zero-size array to reduction operation")
