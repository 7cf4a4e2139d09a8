"""Means, maxima and minima over axes inside compiled loops give eager NumPy's bits.

``np.mean(x, axis)`` is the sum over the axes in NumPy's order (``test_compiled_axis_sums``) divided
in float64 by the count, the quotient in ``x``'s dtype: a float32 mean accumulates in float32.
``np.max``/``np.min`` over axes visit the elements in the same order, each result element starting
at its first element: along a kept last axis element by element (a later element wins a tie of
0.0 and -0.0), along reduced last axes NumPy's SIMD reduction of each run (``extremes``). NaN
anywhere gives NaN; a reduced axis of length 0 raises NumPy's ValueError at the user's line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from test_compiled_axis_sums import LOOP_TRIPS, assert_compiled, edge_values, run_both, same_bits

import dy2st
from dy2st.backend.numba.extremes import _numpy_extreme_of_numbers, lane_order, model_extreme
from dy2st.backend.numba.support import COMPILED_LOOP

pytest.importorskip("numba")
pytestmark = pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # inf - inf, eagerly

REDUCTIONS = {"mean": np.mean, "max": np.max, "min": np.min}


def reduced_products(name, axis, keepdims):
    reduce = REDUCTIONS[name]

    def kernel(x, w, out):
        for i in range(x.shape[0]):
            out[i] = reduce(x[i] * w, axis=axis, keepdims=keepdims)
        return out

    return kernel


def reduced_blocks(name, axis, keepdims):
    reduce = REDUCTIONS[name]

    def kernel(x, out):
        for i in range(x.shape[0]):
            out[i] = reduce(x[i], axis=axis, keepdims=keepdims)
        return out

    return kernel


def result_like(name, x, axis, keepdims, fill=0.0):
    """The array the kernels above write into: one result per iteration."""
    shape = np.shape(REDUCTIONS[name](x[0], axis=axis, keepdims=keepdims))
    return np.full((x.shape[0], *shape), fill, x.dtype)


def signed_zero_ties(shape, dtype, seed: int, nan_share: float = 0.0) -> np.ndarray:
    """Mostly zeros of both signs, some values below and above them, infinities and NaNs of both
    signs: the maxima and minima are ties of 0.0 and -0.0 (which NumPy's order picks) or NaNs."""
    pool = np.array([-0.0, 0.0, -1.0, 1.0, -np.inf, np.inf, np.nan, -np.nan], dtype)
    weights = np.array([4, 4, 1, 1, 0.2, 0.2, nan_share, nan_share])
    return np.random.default_rng(seed).choice(pool, size=shape, p=weights / weights.sum())


# (shape of x[i], shape of w, axis, keepdims): kept last axes (element by element), reduced last
# axes (runs shorter and longer than a SIMD vector, and than 128), axes of length 1 kept between
# them, broadcast operands, all axes.
SHAPES = [
    ((4, 3, 3, 2, 5), (1, 3, 3, 2, 5), (1, 2, 3), False),
    ((9, 17), (17,), (0,), False),
    ((9, 17), (9, 1), (1,), False),
    ((5, 130), (130,), (1,), False),
    ((3, 300), (1, 300), (1,), True),
    ((3, 4, 5), (4, 1), (0, 2), False),
    ((3, 4, 5), (4, 1), (0, 2), True),
    ((6, 1, 7), (1, 7), (0,), True),
    ((6, 7, 1), (7, 1), (0,), False),
    ((9, 1), (1,), (0,), False),
    ((1, 9), (9,), (0,), False),
    ((2, 9, 1, 3), (9, 1, 3), (1, 3), False),
    ((3, 5, 4), (5, 4), None, False),
    ((3, 5, 4), (), (0, 1, 2), True),
]


@pytest.mark.parametrize("name", ["mean", "max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape, w_shape, axis, keepdims", SHAPES)
def test_reductions_of_products_over_axes_give_numpys_bits(name, dtype, x_shape, w_shape, axis, keepdims):
    kernel = reduced_products(name, axis, keepdims)
    static = dy2st.to_static(kernel, backend="compiled")
    cases = [
        (edge_values((LOOP_TRIPS, *x_shape), dtype, seed=len(x_shape)), edge_values(w_shape, dtype, seed=7)),
        (
            edge_values((LOOP_TRIPS, *x_shape), dtype, seed=3, finite=True),
            edge_values(w_shape, dtype, seed=8, finite=True),
        ),
        (signed_zero_ties((LOOP_TRIPS, *x_shape), dtype, seed=1), np.ones(w_shape, dtype)),
        (signed_zero_ties((LOOP_TRIPS, *x_shape), dtype, seed=2, nan_share=0.01), np.ones(w_shape, dtype)),
    ]
    for x, w in cases:
        out = result_like(name, x * w, axis, keepdims)
        assert same_bits(static(x, w, out.copy()), kernel(x, w, out.copy()))
    source = assert_compiled(static, x, w, out)
    assert f"np.empty(({', '.join(map(str, x_shape))}, )" not in source  # the product is never made


@pytest.mark.parametrize("name", ["mean", "max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_reductions_of_row_blocks_give_numpys_bits_over_many_shapes(name, dtype):
    rng = np.random.default_rng(5)
    for case in range(12):
        ndim = int(rng.integers(1, 4))
        x_shape = tuple(int(s) for s in rng.choice([1, 2, 3, 8, 9, 17, 40], ndim))
        axis = tuple(sorted(rng.choice(ndim, int(rng.integers(1, ndim + 1)), replace=False).tolist()))
        keepdims = bool(rng.random() < 0.3)
        x = edge_values((LOOP_TRIPS, *x_shape), dtype, seed=case, finite=name == "mean")
        if name != "mean" and case % 2:
            x = signed_zero_ties(x.shape, dtype, seed=case, nan_share=0.005)
        out = result_like(name, x, axis, keepdims)
        compiled, eager, _ = run_both(reduced_blocks(name, axis, keepdims), x, out)
        assert same_bits(compiled, eager), (x_shape, axis, keepdims)


# --- means --------------------------------------------------------------------------------------
def column_means(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i].mean(axis=0)
    return out


def test_a_float32_mean_accumulates_in_float32_as_numpys():
    # 2**24 + 1 is not a float32: a float32 sum drops each 1, a float64 one would keep them.
    x = np.ones((LOOP_TRIPS, 9, 3), np.float32)
    x[:, 0] = 2.0**24
    compiled, eager, _ = run_both(column_means, x, np.zeros((LOOP_TRIPS, 3), np.float32))
    assert same_bits(compiled, eager)
    assert compiled[0, 0] != np.float32(x[0, :, 0].astype(np.float64).mean())


def test_means_whose_counts_change_between_calls_keep_numpys_bits():
    static = dy2st.to_static(column_means, backend="compiled")
    for rows, columns in [(20, 5), (1, 7), (13, 1), (130, 3), (20, 0)]:
        x = edge_values((LOOP_TRIPS, rows, columns), np.float32, seed=rows, finite=True)
        compiled = static(x, np.full((LOOP_TRIPS, columns), 7.0, np.float32))
        assert same_bits(compiled, column_means(x, np.full((LOOP_TRIPS, columns), 7.0, np.float32)))
    assert_compiled(static, x, np.zeros((LOOP_TRIPS, 0), np.float32))


def prefix_means(x, out):
    for k in range(out.shape[0]):
        out[k] = x[:k].mean(axis=0)  # no rows at k == 0
    return out


def test_a_mean_over_an_axis_empty_only_when_the_loop_runs_is_nan():
    # Eager NumPy warns ("Mean of empty slice"); compiled code gives its NaN silently, as it does
    # floating-point warnings (docs/compiled-tier.md).
    x = edge_values((LOOP_TRIPS, 3), np.float32, seed=9, finite=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        compiled, eager, _ = run_both(prefix_means, x, np.zeros((LOOP_TRIPS, 3), np.float32))
    assert np.isnan(compiled[0]).all() and same_bits(compiled, eager)


def test_a_mean_over_an_axis_of_static_length_zero_stays_on_the_numpy_tier_with_its_warning():
    x, out = np.zeros((LOOP_TRIPS, 0, 3)), np.zeros((LOOP_TRIPS, 3))
    static = dy2st.to_static(column_means, backend="compiled")
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        assert np.isnan(static(x, out)).all()
    assert not any(op.attrs.get(COMPILED_LOOP) for op in static.graph(x, out).walk())


# --- maxima and minima --------------------------------------------------------------------------
def extremes_of_blocks(x, out):
    for i in range(x.shape[0]):
        out[i, 0] = np.max(x[i], axis=0)
        out[i, 1] = x[i].min(axis=0)
        out[i, 2] = np.maximum.reduce(x[i], axis=1)
        out[i, 3] = np.amin(x[i], axis=1)
    return out


@pytest.mark.parametrize(
    "column, expected_sign",
    [([0.0, -0.0], True), ([-0.0, 0.0], False), ([0.0, -0.0, 0.0], False), ([-0.0, 0.0, -0.0], True)],
)
def test_the_zero_numpy_returns_for_a_tie_along_each_axis(column, expected_sign):
    # Along a kept last axis (axis 0) and along a short run (axis 1) alike, NumPy keeps the later
    # of two tied zeros, for the maximum and the minimum.
    n = len(column)
    down = np.ascontiguousarray(np.broadcast_to(np.array(column)[:, None], (LOOP_TRIPS, n, n)))
    across = np.ascontiguousarray(down.transpose(0, 2, 1))
    for x, ties in ((down, slice(0, 2)), (across, slice(2, 4))):
        compiled, eager, _ = run_both(extremes_of_blocks, x, np.ones((LOOP_TRIPS, 4, n)))
        assert same_bits(compiled, eager)
        assert (np.signbit(compiled[:, ties]) == expected_sign).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [2, 3, 9, 17, 40, 64])
def test_maxima_and_minima_of_ties_and_nans_give_numpys_bits(dtype, size):
    static = dy2st.to_static(extremes_of_blocks, backend="compiled")
    out = np.ones((LOOP_TRIPS, 4, size), dtype)
    for seed, nan_share in enumerate([0.0, 0.0, 0.003, 0.05]):
        x = signed_zero_ties((LOOP_TRIPS, size, size), dtype, seed, nan_share)
        assert same_bits(static(x, out.copy()), extremes_of_blocks(x, out.copy()))
    assert_compiled(static, x, out)


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.int64, np.uint64])
def test_maxima_and_minima_of_integers_over_axes_are_numpys(dtype):
    info = np.iinfo(dtype)
    x = np.random.default_rng(2).integers(info.min, info.max, (LOOP_TRIPS, 9, 9), dtype=dtype, endpoint=True)
    compiled, eager, _ = run_both(extremes_of_blocks, x, np.zeros((LOOP_TRIPS, 4, 9), dtype))
    assert same_bits(compiled, eager)


def test_an_integer_maximum_of_a_strided_view_compiles():
    def strided_maxima(x, out):
        for i in range(x.shape[0]):
            out[i] = x[i, :, ::2].max(axis=1)  # any order gives an integer maximum
        return out

    x = np.random.default_rng(3).integers(-100, 100, (LOOP_TRIPS, 4, 18))
    compiled, eager, _ = run_both(strided_maxima, x, np.zeros((LOOP_TRIPS, 4), np.int64))
    assert same_bits(compiled, eager)


def test_a_float_maximum_of_a_strided_view_stays_on_the_numpy_tier():
    def strided_maxima(x, out):
        for i in range(x.shape[0]):
            out[i] = x[i, :, ::2].max(axis=1)  # NumPy's runs follow the strides of the view
        return out

    x = signed_zero_ties((LOOP_TRIPS, 4, 18), np.float64, seed=4)
    static = dy2st.to_static(strided_maxima, backend="compiled")
    out = np.zeros((LOOP_TRIPS, 4))
    assert same_bits(static(x, out.copy()), strided_maxima(x, out.copy()))
    assert not any(op.attrs.get(COMPILED_LOOP) for op in static.graph(x, out).walk())


def column_maxima(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i].max(axis=0)
    return out


def test_maxima_whose_sizes_change_between_calls_keep_numpys_bits():
    # The kept axis has length 1 in some calls: NumPy then reduces the column as a run, with its
    # SIMD reduction, which the compiled loop tests when it runs.
    static = dy2st.to_static(column_maxima, backend="compiled")
    for rows, columns in [(20, 5), (40, 1), (7, 3), (33, 1), (5, 0)]:
        x = signed_zero_ties((LOOP_TRIPS, rows, columns), np.float32, seed=rows, nan_share=0.01)
        compiled = static(x, np.ones((LOOP_TRIPS, columns), np.float32))
        assert same_bits(compiled, column_maxima(x, np.ones((LOOP_TRIPS, columns), np.float32)))
    x = np.ones((LOOP_TRIPS, 7, 3), np.float32)
    assert "== 1:" in assert_compiled(static, x, np.ones((LOOP_TRIPS, 3), np.float32))


def maxima_of_prefixes(x, rows, out):
    for k in range(out.shape[0]):
        out[k] = x[: rows - k].max(axis=0)  # no rows once k reaches rows
    return out


def test_a_maximum_over_an_empty_axis_raises_numpys_value_error_at_the_users_line():
    x = signed_zero_ties((LOOP_TRIPS, 3), np.float64, seed=6, nan_share=0.05)
    static = dy2st.to_static(maxima_of_prefixes, backend="compiled")
    out = np.full((LOOP_TRIPS, 3), 7.0)
    assert same_bits(static(x, LOOP_TRIPS, out.copy()), maxima_of_prefixes(x, LOOP_TRIPS, out.copy()))
    assert_compiled(static, x, LOOP_TRIPS, out.copy())
    compiled, eager = out.copy(), out.copy()
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum which has no identity"):
        maxima_of_prefixes(x, 4, eager)
    with pytest.raises(
        ValueError, match="zero-size array to reduction operation maximum which has no identity"
    ) as raised:
        static(x, 4, compiled)
    line = maxima_of_prefixes.__code__.co_firstlineno + 2
    assert f"test_compiled_axis_means_and_extremes.py:{line}" in str(raised.value)
    assert same_bits(compiled, eager)  # the rows before the error written, as eagerly


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_plain_pass_gives_the_models_bits_for_every_extreme(dtype):
    # Runs whose extreme is a repeated number, an infinity, a zero of either sign or NaN.
    rng = np.random.default_rng(11)
    order = lane_order(np.dtype(dtype))
    pool = np.array([-0.0, 0.0, -2.5, 2.5, 7.0, -np.inf, np.inf, np.nan, -np.nan], dtype)
    for length in [*range(2, 40), 63, 64, 65, 130]:
        for weights in ([4, 4, 1, 1, 0, 0, 0, 0, 0], [1, 1, 3, 3, 3, 0.3, 0.3, 0, 0], [1, 1, 1, 1, 1, 1, 1, 0.1, 0.1]):
            p = np.array(weights) / sum(weights)
            x = rng.choice(pool, size=length, p=p)
            for is_max in (True, False):
                fast = _numpy_extreme_of_numbers(x, is_max, order, dtype(np.nan))
                exact = model_extreme(x, is_max, order)
                assert np.asarray(fast).tobytes() == np.asarray(exact).tobytes(), (x, is_max)
