"""Our own math functions (``backend/numba/vector_math.py``): within 4 ulp of NumPy's over the whole
domain, with NumPy's NaN, infinities and signed zeros (docs/compiled-tier.md), vectorized, and used
by compiled fused groups and compiled loops."""

from __future__ import annotations

import platform
import re

import numpy as np
import pytest
from test_compiled_math_on_arrays import assert_compiled, executor_of, ulps_apart

import dy2st
from dy2st.backend.numba.executor import TieredExecutor

pytest.importorskip("numba")

from dy2st.backend.numba.fused_kernel import OWN_MATH_PARALLEL_ELEMENTS  # noqa: E402
from dy2st.backend.numba.kernel_cache import load_module  # noqa: E402
from dy2st.backend.numba.support import SMALL_OWN_MATH_ELEMENTS  # noqa: E402
from dy2st.backend.numba.vector_math import VECTOR_MATH_PRELUDE  # noqa: E402

# Where tanh is ±1.0 from (the exact value rounds there), and the caps our functions put on |x|.
SATURATION = {np.dtype(np.float32): (9.01, 9.5), np.dtype(np.float64): (19.06, 22.0)}


@pytest.fixture(scope="module")
def own():
    """The generated module's functions, compiled from the very source compiled code gets."""
    return load_module("", VECTOR_MATH_PRELUDE)


def random_inputs(dtype, count: int, seed: int) -> np.ndarray:
    """``count`` values of every magnitude (log-uniform from the smallest subnormal to 1e4) and
    both signs, then as many uniform ones where tanh bends (|x| < 25), and where the float64 form
    switches from its polynomial to expm1 (0.27) and expm1's reduction steps (multiples of ln2/4)."""
    info = np.finfo(dtype)
    rng = np.random.default_rng(seed)
    signs = rng.choice([-1.0, 1.0], count)
    magnitudes = np.exp(rng.uniform(np.log(float(info.smallest_subnormal)), np.log(1e4), count))
    steps = np.log(2) / 4 * rng.integers(1, 200, count // 4) + rng.uniform(-1e-6, 1e-6, count // 4)
    values = [magnitudes * signs, rng.uniform(-25, 25, count), rng.uniform(0.26, 0.28, count // 4), steps]
    return np.concatenate(values).astype(dtype)


def edge_inputs(dtype) -> np.ndarray:
    info = np.finfo(dtype)
    saturation, cap = SATURATION[np.dtype(dtype)]
    values = [0.0, -0.0, np.inf, -np.inf, np.nan, info.smallest_subnormal, info.tiny, info.max, 1.0, 0.27]
    values += [float(info.tiny) * 7, float(info.smallest_subnormal) * 3, 1e-30, 2.0**-27, 2.0**-13, 0.5, 20.0]
    near = [saturation, cap, 0.27, 0.346573590279972655, 0.693147180559945309, 1.5]
    around = [np.nextafter(dtype(v), dtype(d)) for v in near for d in (-np.inf, np.inf)]
    positive = np.array([*values, *near, *around], dtype)
    return np.concatenate([positive, -positive])


def assert_within_4_ulp_of_numpys(got: np.ndarray, expected: np.ndarray, where: str) -> int:
    """NaN where NumPy has NaN, its infinities and signs of zeros, every other value within 4 ulp.
    Returns the largest distance."""
    assert got.dtype == expected.dtype and got.shape == expected.shape, where
    assert np.array_equal(np.isnan(got), np.isnan(expected)), f"{where}: NaNs differ"
    assert np.array_equal(got[np.isinf(expected)], expected[np.isinf(expected)]), f"{where}: infinities differ"
    zeros = expected == 0
    assert np.array_equal(np.signbit(got[zeros]), np.signbit(expected[zeros])), f"{where}: signs of zeros differ"
    finite = np.isfinite(expected)
    worst = int(ulps_apart(got[finite], expected[finite]).max())
    assert worst <= 4, f"{where}: {worst} ulp from NumPy's"
    return worst


def ours(own, name: str, dtype):
    """Our function ``name`` on arrays of ``dtype``."""
    return getattr(own, f"_{name}_{'f32' if np.dtype(dtype) == np.float32 else 'f64'}_array")


# exp's ends: where it overflows to inf and where it underflows to 0.0, past its subnormal results.
EXP_ENDS = {np.dtype(np.float32): (88.72284, -103.97208), np.dtype(np.float64): (709.782712893384, -745.1332191019411)}


def exp_inputs(dtype, count: int, seed: int) -> np.ndarray:
    """Values of every magnitude, uniform ones over exp's whole range (overflow and subnormal
    results included), and near 0, where exp is 1 + x."""
    info = np.finfo(dtype)
    rng = np.random.default_rng(seed)
    high, low = EXP_ENDS[np.dtype(dtype)]
    signs = rng.choice([-1.0, 1.0], count)
    magnitudes = np.exp(rng.uniform(np.log(float(info.smallest_subnormal)), np.log(1e4), count))
    values = [magnitudes * signs, rng.uniform(low - 2, high + 2, count), rng.uniform(-2, 2, count)]
    return np.concatenate(values).astype(dtype)


def exp_edges(dtype) -> np.ndarray:
    info = np.finfo(dtype)
    high, low = EXP_ENDS[np.dtype(dtype)]
    values = [0.0, -0.0, np.inf, -np.inf, np.nan, info.smallest_subnormal, info.tiny, info.max, -info.max]
    values += [1.0, -1.0, 1e-30, -1e-30, 0.5, -0.5, high, low, info.minexp * np.log(2), 2.0**-27, -(2.0**-27)]
    with np.errstate(over="ignore"):  # the neighbours of the largest value include inf
        around = [np.nextafter(dtype(v), dtype(d)) for v in values[5:] for d in (-np.inf, np.inf)]
    return np.array([*values, *around], dtype)


INPUTS = {"tanh": random_inputs, "exp": exp_inputs}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["tanh", "exp"])
@pytest.mark.parametrize("seed", [0, 1])
def test_our_functions_are_within_4_ulp_of_numpys_on_millions_of_inputs_of_every_magnitude(own, name, dtype, seed):
    x = INPUTS[name](dtype, 1_000_000, seed)
    with np.errstate(over="ignore"):
        expected = getattr(np, name)(x)
    # Measured on this machine: tanh at most 1 ulp (float32) and 2 ulp (float64) from NumPy's,
    # exp 2 (float32) and 1 (float64).
    assert_within_4_ulp_of_numpys(ours(own, name, dtype)(x), expected, f"{name} of {np.dtype(dtype)}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tanh_has_numpys_edges_zeros_subnormals_saturation_and_nan(own, dtype):
    x = edge_inputs(dtype)
    got = ours(own, "tanh", dtype)(x)
    assert_within_4_ulp_of_numpys(got, np.tanh(x), f"tanh of {np.dtype(dtype)} at its edges")
    assert np.all(got[x == np.inf] == 1.0) and np.all(got[x == -np.inf] == -1.0)
    tiny = (np.abs(x) < 1e-20) & (x != 0)
    assert np.array_equal(got[tiny], x[tiny])  # tanh(x) is x there, subnormals included
    saturation, _ = SATURATION[np.dtype(dtype)]
    assert np.all(np.abs(got[np.abs(x) > saturation * 1.001]) == 1.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exp_has_numpys_edges_overflow_subnormal_results_and_nan(own, dtype):
    x = exp_edges(dtype)
    with np.errstate(over="ignore"):
        expected = np.exp(x)
    got = ours(own, "exp", dtype)(x)
    assert_within_4_ulp_of_numpys(got, expected, f"exp of {np.dtype(dtype)} at its edges")
    assert np.array_equal(got[np.abs(x) < 1e-20], np.ones_like(got[np.abs(x) < 1e-20]))
    assert np.all(got[x > EXP_ENDS[np.dtype(dtype)][0]] == np.inf)
    assert np.all(got[x < EXP_ENDS[np.dtype(dtype)][1] - 1] == 0.0)


@pytest.mark.parametrize("name", ["tanh", "exp"])
def test_the_scalar_functions_give_the_array_functions_values(own, name):
    for dtype in (np.float32, np.float64):
        x = INPUTS[name](dtype, 1000, 5)
        suffix = "f32" if dtype == np.float32 else "f64"
        scalar = getattr(own, f"_{name}_{suffix}")
        assert np.array_equal(ours(own, name, dtype)(x), np.array([scalar(v) for v in x], dtype), equal_nan=True)


def test_the_array_functions_take_views_and_keep_the_shape(own):
    x = np.linspace(-5, 5, 60).reshape(6, 10)
    for view in (x, x[:, ::3], x.T, x[::-1]):
        got = own._tanh_f64_array(view)
        assert got.shape == view.shape and got.flags.c_contiguous
        assert ulps_apart(got, np.tanh(view)).max() <= 4


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="reads x86 assembly")
@pytest.mark.parametrize("name", ["_tanh_f32_array", "_tanh_f64_array", "_exp_f32_array", "_exp_f64_array"])
def test_the_functions_vectorize_with_no_calls_in_the_loop(own, name):
    function = getattr(own, name)
    function(np.zeros(4, np.float32 if "f32" in name else np.float64))
    for assembly in function.inspect_asm().values():  # one per array type it was called with
        # Packed double-precision multiplies (mulpd on xmm, ymm or zmm registers): the loop runs on
        # vectors; scalar code would use mulsd only.
        assert re.search(r"\bv?mulpd\b", assembly), "the loop did not vectorize"
        assert not re.search(r"call\w*\s+\S*(tanh|exp)", assembly), "the C library is called"


# --- used by compiled code -----------------------------------------------------------------------------
def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * (x * x * x)))) * 1.702 + 0.25


def test_a_float32_fused_group_with_tanh_runs_our_tanh_on_every_core_of_large_arrays(own):
    static = dy2st.to_static(gelu, backend="compiled")
    x = np.random.default_rng(11).uniform(-6, 6, OWN_MATH_PARALLEL_ELEMENTS + 3).astype(np.float32)
    got = static(x)
    assert any(op.attrs.get("compiled_kernel") for op in static.graph(x).walk())
    assert "_tanh_f32(" in static.compiled_source(x)
    # Every other op gives NumPy's bits: the result is eager's with our tanh in place of NumPy's.
    inner = 0.7978845608 * (x + 0.044715 * (x * x * x))
    ours = own._tanh_f32_array(inner)
    np.testing.assert_array_equal(got, 0.5 * x * (1.0 + ours) * 1.702 + 0.25)
    assert ulps_apart(ours, np.tanh(inner)).max() <= 4


def test_below_a_million_elements_a_fused_group_with_our_math_runs_numpys_simd_loops():
    # On one core NumPy's float32 tanh (0.16 ns an element) beats ours (0.64), and two cores save
    # little below a million elements: the NumPy tier's tiled kernel runs the call, with NumPy's bits.
    static = dy2st.to_static(gelu, backend="compiled")
    x = np.random.default_rng(12).uniform(-6, 6, OWN_MATH_PARALLEL_ELEMENTS - 1).astype(np.float32)
    np.testing.assert_array_equal(static(x), gelu(x))
    assert any(op.attrs.get("compiled_kernel") for op in static.graph(x).walk())


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


@pytest.mark.parametrize(
    "fn, dtype, compiled",
    [(gelu, np.float64, False), (sigmoid, np.float32, True), (sigmoid, np.float64, False)],
    ids=["tanh-float64", "exp-float32", "exp-float64"],
)
def test_fused_groups_use_our_math_where_it_beats_numpys_simd_loops(own, fn, dtype, compiled):
    # float64: NumPy's SIMD tanh and exp are 2-3x faster than ours; two cores do not make it up.
    static = dy2st.to_static(fn, backend="compiled")
    x = np.random.default_rng(13).uniform(-90, 90, OWN_MATH_PARALLEL_ELEMENTS).astype(dtype)
    with np.errstate(over="ignore"):
        got, eager = static(x), fn(x)
    assert any(op.attrs.get("compiled_kernel") for op in static.graph(x).walk()) == compiled
    if compiled:
        np.testing.assert_array_equal(got, 1.0 / (1.0 + own._exp_f32_array(-x)))
    else:
        np.testing.assert_array_equal(got, eager)


def rows_of_tanh(A):
    for i in range(1, A.shape[0]):
        A[i, :] = np.tanh(A[i - 1, :] * 1.5 - 0.25)
    return A


def rows_of_log(A):
    for i in range(1, A.shape[0]):
        A[i, :] = np.log(A[i - 1, :] + 2.0)
    return A


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_loop_with_tanh_on_arrays_up_to_the_own_math_limit_compiles_with_our_tanh(dtype):
    static = dy2st.to_static(rows_of_tanh, backend="compiled")
    A = np.random.default_rng(12).uniform(-3, 3, (6, SMALL_OWN_MATH_ELEMENTS)).astype(dtype)
    got, eager = static(A.copy()), rows_of_tanh(A.copy())
    assert_compiled(static, A.copy())
    assert "_tanh_f" in static.compiled_source(A.copy())
    for i in range(1, A.shape[0]):  # each row from the compiled row before it: one tanh's error
        assert ulps_apart(got[i], np.tanh(got[i - 1] * 1.5 - 0.25)).max() <= 4
    tolerance = 1e-5 if dtype == np.float32 else 1e-13  # the recurrence carries each row's ulp on
    np.testing.assert_allclose(got, eager, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("fn, elements", [(rows_of_tanh, SMALL_OWN_MATH_ELEMENTS * 2), (rows_of_log, 256)])
def test_loops_with_larger_math_on_arrays_stay_on_the_numpy_tier(fn, elements):
    # Beyond the limits NumPy's SIMD loops win: our tanh past 512 elements, the C library's log
    # (one call per element) past 128.
    static = dy2st.to_static(fn, backend="compiled")
    A = np.random.default_rng(13).random((6, elements))
    np.testing.assert_array_equal(static(A.copy()), fn(A.copy()))
    assert not isinstance(executor_of(static, A.copy()), TieredExecutor)
