"""Math functions on arrays inside compiled loops: each result within 4 ulp of NumPy's, NaN and
infinities where NumPy has them (docs/compiled-tier.md), and the recurrent step of W3 compiles."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dy2st
from dy2st.backend.numba.executor import TieredExecutor
from dy2st.backend.numba.support import MATH_UFUNCS

pytest.importorskip("numba")


def executor_of(static, *args):
    static(*args)
    (compiled,) = [c for entries in [*static._cache.values(), *static._dynamic_cache.values()] for c in entries]
    return compiled.executor


def assert_compiled(static, *args):
    executor = executor_of(static, *args)
    assert isinstance(executor, TieredExecutor) and executor.tier == "compiled", getattr(executor, "failures", None)


# --- one loop per family of functions, each applied to a row of edge values per iteration ------------
def exponentials(x, out):
    for i in range(x.shape[0]):
        out[0, i, :] = np.exp(x[i, :])
        out[1, i, :] = np.exp2(x[i, :])
        out[2, i, :] = np.expm1(x[i, :])
    return out


def logarithms(x, out):
    for i in range(x.shape[0]):
        out[0, i, :] = np.log(x[i, :])
        out[1, i, :] = np.log2(x[i, :])
        out[2, i, :] = np.log10(x[i, :])
        out[3, i, :] = np.log1p(x[i, :])
    return out


def trigonometric(x, out):
    for i in range(x.shape[0]):
        out[0, i, :] = np.sin(x[i, :])
        out[1, i, :] = np.cos(x[i, :])
        out[2, i, :] = np.tan(x[i, :])
        out[3, i, :] = np.arcsin(x[i, :])
        out[4, i, :] = np.arccos(x[i, :])
        out[5, i, :] = np.arctan(x[i, :])
        out[6, i, :] = np.arctan2(x[i, :], x[x.shape[0] - 1 - i, :])
        out[7, i, :] = np.deg2rad(x[i, :])
        out[8, i, :] = np.rad2deg(x[i, :])
    return out


def hyperbolic(x, out):
    for i in range(x.shape[0]):
        out[0, i, :] = np.sinh(x[i, :])
        out[1, i, :] = np.cosh(x[i, :])
        out[2, i, :] = np.tanh(x[i, :])
        out[3, i, :] = np.arcsinh(x[i, :])
        out[4, i, :] = np.arccosh(x[i, :])
        out[5, i, :] = np.arctanh(x[i, :])
    return out


def roots_and_norms(x, out):
    for i in range(x.shape[0]):
        out[0, i, :] = np.cbrt(x[i, :])
        out[1, i, :] = np.hypot(x[i, :], x[x.shape[0] - 1 - i, :])
    return out


FAMILIES = {
    exponentials: [np.exp, np.exp2, np.expm1],
    logarithms: [np.log, np.log2, np.log10, np.log1p],
    trigonometric: [np.sin, np.cos, np.tan, np.arcsin, np.arccos, np.arctan, np.arctan2, np.deg2rad, np.rad2deg],
    hyperbolic: [np.sinh, np.cosh, np.tanh, np.arcsinh, np.arccosh, np.arctanh],
    roots_and_norms: [np.cbrt, np.hypot],
}


def test_the_families_cover_every_math_function_compiled_on_arrays():
    assert {f for functions in FAMILIES.values() for f in functions} == MATH_UFUNCS


def edge_rows(dtype) -> np.ndarray:
    """Rows of 64 values: the edges (zeros of both signs, infinities, NaN, the smallest subnormal and
    normal, the largest value, and values near the domains' ends), then random values of every
    magnitude and of the usual ranges."""
    info = np.finfo(dtype)
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, info.smallest_subnormal, -info.smallest_subnormal]
    edges += [info.tiny, -info.tiny, info.max, -info.max, 1.0, -1.0, 0.5, -0.5, 1e-8, -1e-8, 1 - info.eps]
    edges += [-1 + info.epsneg, 1 + info.eps, 710.0, -745.0, 89.0, -104.0, 3.0e5, np.pi / 2, np.pi, 20.0]
    rng = np.random.default_rng(np.dtype(dtype).itemsize)
    magnitudes = np.exp(rng.uniform(np.log(info.tiny), np.log(info.max), 200)) * rng.choice([-1.0, 1.0], 200)
    values = np.concatenate([edges, magnitudes, rng.uniform(-1, 1, 200), rng.uniform(-30, 30, 300)])
    values = values[: len(values) // 64 * 64]
    return values.astype(dtype).reshape(-1, 64)


def ulps_apart(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The distance of each pair of finite floats in units in the last place (on the line of their
    bit patterns, where -0.0 and 0.0 are one point)."""
    kind = np.int32 if a.dtype == np.float32 else np.int64
    magnitude = np.int64(2 ** (a.dtype.itemsize * 8 - 1) - 1)
    ai, bi = a.view(kind).astype(np.int64), b.view(kind).astype(np.int64)
    ai = np.where(ai < 0, -(ai & magnitude), ai)
    bi = np.where(bi < 0, -(bi & magnitude), bi)
    return np.abs(ai - bi)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("family", list(FAMILIES), ids=lambda f: f.__name__)
def test_math_functions_on_arrays_are_within_4_ulp_of_numpys_with_its_nans_and_infinities(family, dtype):
    x = edge_rows(dtype)
    count = len(FAMILIES[family])
    static = dy2st.to_static(family, backend="compiled")
    compiled = static(x, np.zeros((count, *x.shape), dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        eager = family(x, np.zeros((count, *x.shape), dtype))
    assert_compiled(static, x, np.zeros((count, *x.shape), dtype))
    for k, function in enumerate(FAMILIES[family]):
        got, expected = compiled[k], eager[k]
        where = f"np.{function.__name__} on {np.dtype(dtype)}"
        assert np.array_equal(np.isnan(got), np.isnan(expected)), f"{where}: NaNs differ"
        assert np.array_equal(got[np.isinf(expected)], expected[np.isinf(expected)]), f"{where}: infinities differ"
        assert not np.isinf(got[~np.isinf(expected)]).any(), f"{where}: infinities differ"
        zeros = expected == 0
        assert np.array_equal(np.signbit(got[zeros]), np.signbit(expected[zeros])), f"{where}: signs of zeros differ"
        finite = np.isfinite(expected)
        worst = int(ulps_apart(got[finite], expected[finite]).max())
        assert worst <= 4, f"{where}: {worst} ulp from NumPy's"


# --- the recurrent step of W3 ------------------------------------------------------------------------
def rnn(xs, h, WX, WH, b):
    for i in range(xs.shape[0]):
        h = np.tanh(xs[i] @ WX + h @ WH + b)
    return h


# How far a recurrence may carry the 4 ulp of each step (docs/compiled-tier.md): on this machine
# the W3 RNN (200 steps, hidden 32, float64) ended 4 to 385 ulp from eager's over ten random sets of
# weights with our tanh, at most 3.9e-16 apart (relatively 6.2e-14; the C library's: 1.0e-13).
RECURRENCE_TOLERANCE = {np.dtype(np.float64): 1e-13, np.dtype(np.float32): 1e-5}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_recurrent_step_of_w3_compiles_and_stays_close_to_eager(dtype):
    rng = np.random.default_rng(3)
    WX, WH = ((rng.standard_normal((32, 32)) * 0.2).astype(dtype) for _ in range(2))
    args = (
        rng.standard_normal((200, 32)).astype(dtype),
        np.zeros(32, dtype),
        WX,
        WH,
        (rng.standard_normal(32) * 0.1).astype(dtype),
    )
    static = dy2st.to_static(rnn, backend="compiled")
    compiled, eager = static(*args), rnn(*args)
    assert_compiled(static, *args)
    assert "_tanh_f" in static.compiled_source(*args)  # our vectorized tanh (vector_math.py)
    assert compiled.dtype == eager.dtype == dtype
    tolerance = RECURRENCE_TOLERANCE[np.dtype(dtype)]
    np.testing.assert_allclose(compiled, eager, rtol=tolerance, atol=tolerance)
