"""``np.where`` of 0-d values inside compiled loops runs as ``x if c else y``: NumPy's bits (NaN,
infinities, signed zeros kept, a Python float cast to float32 as NumPy casts it); selects that
would need a cast NumPy may wrap around (a Python int into int8) stay on the NumPy tier."""

from __future__ import annotations

import numpy as np
import pytest

import dy2st
from dy2st.backend.numba.executor import TieredExecutor

pytest.importorskip("numba")

EDGES = [-1.5, 0.0, -0.0, 2.0, np.nan, -np.inf, np.inf, 1e-30, 0.1]


def relu_elements(x):
    y = np.empty_like(x)
    for i in range(x.shape[0]):
        y[i] = np.where(x[i] > 0, x[i], 0.1)
    return y


def pick_between(x, z):
    total = x[0] * 0.0
    for i in range(x.shape[0]):
        total = total + np.where(x[i] < z[i], z[i], x[i])
    return total


def int8_with_a_python_int(b):
    out = np.zeros_like(b)
    for i in range(b.shape[0]):
        out[i] = np.where(b[i] > 0, b[i], 1000)
    return out


def tier_of(static, *args):
    static(*args)
    executors = [c.executor for entries in static._cache.values() for c in entries]
    return [e.tier if isinstance(e, TieredExecutor) else "numpy" for e in executors]


def same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_select_in_a_loop_compiles_with_numpys_bits(dtype):
    x = np.array(EDGES, dtype)
    static = dy2st.to_static(relu_elements, backend="compiled")
    assert tier_of(static, x) == ["compiled"]
    assert " if " in static.compiled_source(x)
    assert same_bits(static(x), relu_elements(x))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_carried_select_with_nans(dtype):
    rng = np.random.default_rng(0)
    x = np.array(EDGES, dtype)
    z = rng.permutation(x)
    static = dy2st.to_static(pick_between, backend="compiled")
    assert tier_of(static, x, z) == ["compiled"]
    assert same_bits(static(x, z), pick_between(x, z))


def test_a_select_numpy_would_wrap_stays_on_the_numpy_tier():
    b = np.array([3, -2, 0], np.int8)
    static = dy2st.to_static(int8_with_a_python_int, backend="compiled")
    with np.errstate(all="ignore"):
        result, expected = static(b), int8_with_a_python_int(b)
    assert same_bits(result, expected)
    assert " if " not in static.compiled_source(b)
