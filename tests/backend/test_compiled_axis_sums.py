"""Sums over axes inside compiled loops give eager NumPy's bits: ``np.sum(x * w, axis)`` is one
loop nest that computes each product where it adds it, in the order NumPy's reduction adds
(element by element along a kept last axis, NumPy's pairwise summation of the runs of trailing
reduced axes), and ``x[i].sum(axis=0)`` of a row block reads it as it is.

Values carry zeros of both signs, NaN and infinities. NaN compares as NaN: where NaNs of both
signs meet (``inf - inf`` makes a negative one on x86, ``np.nan`` is positive), which one an
addition keeps depends on the order of its operands in the machine instruction, which neither
NumPy's loops nor LLVM promise; every other bit is compared."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

import dy2st
from dy2st.backend.numba.executor import TieredExecutor
from dy2st.backend.numba.support import COMPILED_LOOP

pytest.importorskip("numba")
pytestmark = pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # inf - inf, eagerly

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "benchmarks"))
from kernels import BY_NAME  # noqa: E402

LOOP_TRIPS = 6  # loops of at most 4 iterations are unrolled: no loop to compile


def same_bits(actual, expected) -> bool:
    """Same type, dtype, shape, NaNs where NaNs are, and every other bit (zeros' signs too)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.dtype != expected.dtype or actual.shape != expected.shape:
        return False
    nans = np.isnan(expected)
    if not np.array_equal(np.isnan(actual), nans):
        return False
    return actual[~nans].tobytes() == expected[~nans].tobytes()


def assert_compiled(static, *args) -> str:
    """Every graph ``static`` built runs its loops compiled; the compiled source for ``args``."""
    entries = [c for entries in [*static._cache.values(), *static._dynamic_cache.values()] for c in entries]
    for entry in entries:
        assert isinstance(entry.executor, TieredExecutor), "the graph was not marked for the compiled tier"
        assert entry.executor.tier == "compiled", entry.executor.failures
    loops = [op for op in static.graph(*args).walk() if op.name == "while_loop"]
    assert loops and all(op.attrs.get(COMPILED_LOOP) for op in loops if op.parent is static.graph(*args).body)
    return static.compiled_source(*args)


def edge_values(shape, dtype, seed: int, finite: bool = False) -> np.ndarray:
    """Values of mixed magnitudes (sums that round, so an order other than NumPy's shows), with
    zeros of both signs and, unless ``finite``, now and then NaN and infinities of both signs."""
    rng = np.random.default_rng(seed)
    x = np.asarray(rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape))
    share = np.asarray(rng.random(shape))
    x[share < 0.08] = -0.0
    x[(share >= 0.08) & (share < 0.12)] = 0.0
    if finite:
        return x.astype(dtype)
    x[(share >= 0.12) & (share < 0.125)] = np.nan
    x[(share >= 0.125) & (share < 0.13)] = np.inf
    x[(share >= 0.13) & (share < 0.135)] = -np.inf
    return x.astype(dtype)


def run_both(fn, *args, check_compiled: bool = True):
    """``fn`` eagerly and compiled on copies of ``args``: both results, and the compiled source."""
    static = dy2st.to_static(fn, backend="compiled")
    compiled = static(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    eager = fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    source = assert_compiled(static, *args) if check_compiled else ""
    return compiled, eager, source


# --- sums of products ---------------------------------------------------------------------------
def sums_of_products(axis, keepdims):
    def kernel(x, w, out):
        for i in range(x.shape[0]):
            out[i] = np.sum(x[i] * w, axis=axis, keepdims=keepdims)
        return out

    return kernel


# (shape of x[i], shape of w, axis, keepdims): kept last axes (element by element), reduced last
# axes (pairwise runs of fewer than 8, of 8 to 128, and of more than 128 elements, which NumPy
# splits in halves), axes of length 1 kept between them, broadcast operands, all axes.
PRODUCT_SUMS = [
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
    ((2, 9, 1, 3), (9, 1, 3), (1, 3), False),
    ((3, 5, 4), (5, 4), None, False),
    ((3, 5, 4), (), (0, 1, 2), True),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape, w_shape, axis, keepdims", PRODUCT_SUMS)
def test_sums_of_products_over_axes_give_numpys_bits(dtype, x_shape, w_shape, axis, keepdims):
    kernel = sums_of_products(axis, keepdims)
    static = dy2st.to_static(kernel, backend="compiled")
    # Edge values, and finite ones: a long run with a NaN or an infinity sums to one in any order.
    for finite in (False, True):
        x = edge_values((LOOP_TRIPS, *x_shape), dtype, seed=len(x_shape), finite=finite)
        w = edge_values(w_shape, dtype, seed=7, finite=finite)
        out = np.zeros((LOOP_TRIPS, *np.sum(x[0] * w, axis=axis, keepdims=keepdims).shape), dtype)
        assert same_bits(static(x, w, out.copy()), kernel(x, w, out.copy())), f"finite={finite}"
    source = assert_compiled(static, x, w, out)
    assert f"np.empty(({', '.join(map(str, x_shape))}, )" not in source  # the product is never made


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sums_of_finite_products_give_numpys_bits_over_many_shapes(dtype):
    rng = np.random.default_rng(3)
    for case in range(12):
        ndim = int(rng.integers(1, 4))
        x_shape = tuple(int(s) for s in rng.choice([1, 2, 3, 8, 9, 17], ndim))
        w_shape = tuple(1 if rng.random() < 0.3 else s for s in x_shape[int(rng.integers(0, ndim)) :])
        axis = tuple(sorted(rng.choice(ndim, int(rng.integers(1, ndim + 1)), replace=False).tolist()))
        x = ((rng.random((LOOP_TRIPS, *x_shape)) - 0.5) * 1e4).astype(dtype)
        w = (rng.random(w_shape) * 3.0).astype(dtype)
        shape = np.sum(x[0] * w, axis=axis).shape
        compiled, eager, _ = run_both(sums_of_products(axis, False), x, w, np.zeros((LOOP_TRIPS, *shape), dtype))
        assert compiled.tobytes() == eager.tobytes(), (x_shape, w_shape, axis)


def test_a_sum_of_negative_zeros_is_zero_as_numpys():
    x = np.full((LOOP_TRIPS, 9, 12), -0.0)
    for axis in [(0,), (1,), (0, 1)]:
        out = np.ones((LOOP_TRIPS, *np.sum(x[0], axis=axis).shape))
        compiled, eager, _ = run_both(sums_of_products(axis, False), x, np.ones(12), out)
        assert same_bits(compiled, eager) and not np.signbit(compiled).any()


def grouped_product_sums(x, w, out):
    for i in range(x.shape[0]):
        # A fused group of ufuncs summed (its array never made), a sum inside a fused group, a
        # sum of a row block read as it is, and a sum of a product read twice (made, then summed).
        product = x[i] * w
        out[i] = (
            np.sum(x[i] * 2.0 - w, axis=0)
            + np.sum(x[i] * w, axis=-1, keepdims=True).sum(axis=(0, 1))
            + x[i].sum(axis=0)
            + product.sum(axis=0) * product[0]
        )
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_groups_rows_and_products_read_twice_are_summed_as_numpy_sums(dtype):
    x = edge_values((LOOP_TRIPS, 9, 5), dtype, seed=11)
    w = edge_values((9, 5), dtype, seed=12)
    compiled, eager, source = run_both(grouped_product_sums, x, w, np.zeros((LOOP_TRIPS, 5), dtype))
    assert same_bits(compiled, eager)
    assert "_numpy_pairwise_sum(" in source  # the sums over the last axis, in runs of 5


# --- the suite's convolution --------------------------------------------------------------------
@pytest.mark.parametrize("preset", ["test", "resized", "small"])
def test_conv2d_compiles_and_gives_numpys_bits(preset):
    kernel = BY_NAME["conv2d"]
    inputs, weights, bias = kernel.make(preset)
    compiled, eager, source = run_both(kernel.function, inputs, weights, bias)
    assert same_bits(compiled, eager)
    assert "_numpy_pairwise_sum(" not in source  # the kept channel axis: added element by element


def test_conv2d_of_edge_values_gives_numpys_bits():
    kernel = BY_NAME["conv2d"]
    inputs = edge_values((2, 9, 9, 3), np.float32, seed=5)
    weights = edge_values((3, 3, 3, 4), np.float32, seed=6)
    bias = edge_values((4,), np.float32, seed=8)
    compiled, eager, _ = run_both(kernel.function, inputs, weights, bias)
    assert same_bits(compiled, eager)


# --- broadcasting checked when the loop runs ----------------------------------------------------
def strided_windows(x, w, n):
    out = np.zeros((n, x.shape[1]), x.dtype)
    for i in range(n):
        out[i] = np.sum(x[3 * i : 3 * i + 3] * w, axis=0)  # the last window may be cut short
    return out


def test_a_window_cut_to_one_row_broadcasts_as_in_numpy():
    x = edge_values((3 * LOOP_TRIPS + 1, 4), np.float64, seed=9)  # the last window has one row
    w = edge_values((3, 4), np.float64, seed=10)
    compiled, eager, _ = run_both(strided_windows, x, w, LOOP_TRIPS + 1)
    assert same_bits(compiled, eager)


def windows(x, w, out):
    for i in range(out.shape[0]):
        out[i] = np.sum(x[i : i + 3] * w, axis=0)
    return out


def test_a_window_cut_to_two_rows_raises_valueerror_as_numpy_leaving_the_same_rows_written():
    x = np.arange((LOOP_TRIPS + 1) * 4, dtype=np.float64).reshape(-1, 4)  # the last window: two rows
    w = np.ones((3, 4))
    out_eager, out_compiled = np.zeros((LOOP_TRIPS, 4)), np.zeros((LOOP_TRIPS, 4))
    with pytest.raises(ValueError):
        windows(x, w, out_eager)
    static = dy2st.to_static(windows, backend="compiled")
    with pytest.raises(ValueError, match="broadcast"):
        static(x, w, out_compiled)
    assert np.array_equal(out_compiled, out_eager)  # the rows before it, written in place
    assert_compiled(static, x, w, out_compiled)


def test_shapes_that_never_broadcast_raise_valueerror_as_numpy():
    kernel = sums_of_products((0,), False)
    x, w, out = np.ones((LOOP_TRIPS, 3, 4)), np.ones(5), np.zeros((LOOP_TRIPS, 4))
    with pytest.raises(ValueError):
        kernel(x, w, out)
    with pytest.raises(ValueError):
        dy2st.to_static(kernel, backend="compiled")(x, w, out)


# --- sizes known only when the loop runs --------------------------------------------------------
def column_sums(x, out):
    for i in range(x.shape[0]):
        out[i] = np.sum(x[i] * 0.5, axis=0)
    return out


def test_sizes_that_change_between_calls_keep_numpys_order():
    # The kept axis has length 1 in some calls: NumPy then sums the column pairwise, not element
    # by element, which the compiled loop tests when it runs.
    static = dy2st.to_static(column_sums, backend="compiled")
    for columns in [5, 1, 7, 1, 3]:
        x = edge_values((LOOP_TRIPS, 20, columns), np.float32, seed=columns)
        compiled = static(x, np.zeros((LOOP_TRIPS, columns), np.float32))
        assert same_bits(compiled, column_sums(x, np.zeros((LOOP_TRIPS, columns), np.float32)))
    source = assert_compiled(static, x, np.zeros((LOOP_TRIPS, 3), np.float32))
    assert "== 1:" in source


def test_empty_axes_sum_to_zeros():
    for x_shape in [(0, 4), (4, 0)]:
        x = np.ones((LOOP_TRIPS, *x_shape), np.float32)
        compiled, eager, _ = run_both(column_sums, x, np.full((LOOP_TRIPS, x_shape[1]), 7.0, np.float32))
        assert same_bits(compiled, eager)


# --- what stays on the NumPy tier ---------------------------------------------------------------
def strided_sums(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i, :, ::2].sum(axis=1)  # NumPy's runs follow the strides of the view
    return out


def test_a_sum_of_a_strided_view_stays_on_the_numpy_tier():
    x = edge_values((LOOP_TRIPS, 4, 18), np.float64, seed=4)
    static = dy2st.to_static(strided_sums, backend="compiled")
    assert same_bits(static(x, np.zeros((LOOP_TRIPS, 4))), strided_sums(x, np.zeros((LOOP_TRIPS, 4))))
    assert not any(op.attrs.get(COMPILED_LOOP) for op in static.graph(x, np.zeros((LOOP_TRIPS, 4))).walk())


# --- sums of vectors ----------------------------------------------------------------------------
def prefix_sums(x, out):
    for k in range(x.shape[0]):
        out[0, k] = x[: k + 1].sum()
        out[1, k] = x[: k + 1].mean()
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sums_and_means_of_negative_zeros_are_zero_as_numpys(dtype):
    x = np.full(12, -0.0, dtype)  # eight or more: NumPy adds the pairwise sum to 0.0
    static = dy2st.to_static(prefix_sums, backend="compiled")
    compiled = static(x, np.ones((2, 12), dtype))
    assert same_bits(compiled, prefix_sums(x, np.ones((2, 12), dtype)))
    assert not np.signbit(compiled).any()
    assert_compiled(static, x, np.ones((2, 12), dtype))
