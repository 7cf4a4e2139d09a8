"""``x.max()`` and ``x.min()`` inside compiled loops give NumPy's bits: which of tied 0.0 and -0.0
NumPy's SIMD reduction returns on this machine, NaN wherever an element is NaN, and the ValueError of
an empty array at the user's line."""

from __future__ import annotations

import numpy as np
import pytest

import dy2st
from dy2st.backend.numba.executor import TieredExecutor
from dy2st.backend.numba.extremes import lane_order, model_extreme

pytest.importorskip("numba")


def executors_of(static, *args):
    """The executors of every graph ``static`` built (one per signature; sizes that changed
    between calls built a dynamic one)."""
    static(*args)
    return [c.executor for entries in [*static._cache.values(), *static._dynamic_cache.values()] for c in entries]


def assert_compiled(static, *args):
    for executor in executors_of(static, *args):
        assert isinstance(executor, TieredExecutor), "the graph was not marked for the compiled tier"
        assert executor.tier == "compiled", executor.failures
    assert "_numpy_extreme(" in static.compiled_source(*args)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def extremes_of_prefixes(x, out):
    for k in range(1, len(x) + 1):
        out[0, k - 1] = x[:k].max()
        out[1, k - 1] = x[:k].min()
        out[2, k - 1] = x[:k][::-1].max()  # reversed and strided: NumPy's other loop
        out[3, k - 1] = np.min(x[:k][::-1])
        out[4, k - 1] = np.amax(x[::2][:k])
        out[5, k - 1] = np.amin(x[::3][:k])
    return out


def tied_values(dtype, length: int, seed: int, nan_share: float) -> np.ndarray:
    """Mostly zeros of both signs, with values below and above them, infinities and a few NaNs of
    both signs: the maxima and minima of the prefixes are ties of 0.0 and -0.0 or NaNs."""
    pool = np.array([-0.0, 0.0, -1.0, 1.0, -np.inf, np.inf, np.nan, -np.nan], dtype)
    weights = np.array([4, 4, 1, 1, 0.2, 0.2, nan_share, nan_share])
    return np.random.default_rng(seed).choice(pool, size=length, p=weights / weights.sum())


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("nan_share", [0.0, 0.002])
def test_max_and_min_of_floats_give_numpys_bits_for_ties_of_signed_zeros_and_nans(dtype, nan_share):
    static = dy2st.to_static(extremes_of_prefixes, backend="compiled")
    for seed, length in enumerate([9, 17, 130, 600]):  # shorter loops are unrolled
        x = tied_values(dtype, length, seed, nan_share)
        compiled = static(x, np.zeros((6, length), dtype))
        eager = extremes_of_prefixes(x, np.zeros((6, length), dtype))
        assert same_bits(compiled, eager), (
            f"length {length}: {np.nonzero(compiled.view(np.uint8) != eager.view(np.uint8))}"
        )
    assert_compiled(static, x, np.zeros((6, length), dtype))


def maximum_of_pair(x, n):
    out = np.zeros(2, x.dtype)
    for i in range(n):  # a tensor bound: a loop in the graph, not unrolled
        out[0] = np.max(x[i:])  # x itself at i == 0 (a view of the counter stays in the loop)
        out[1] = np.min(x[i:])
    return out


@pytest.mark.parametrize("pair", [[0.0, -0.0], [-0.0, 0.0]])
def test_the_zero_numpy_returns_for_a_tie_of_two(pair):
    x = np.array(pair)
    static = dy2st.to_static(maximum_of_pair, backend="compiled")
    compiled = static(x, np.array(1))
    assert_compiled(static, x, np.array(1))
    # NumPy, on this machine and any: of two tied elements, the second wins (its scalar loop).
    expected = np.array([pair[1], pair[1]])
    assert same_bits(maximum_of_pair(x, 1), expected) and same_bits(compiled, expected)


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.int64, np.uint64])
def test_max_and_min_of_integers_are_numpys(dtype):
    info = np.iinfo(dtype)
    x = np.random.default_rng(4).integers(info.min, info.max, 200, dtype=dtype, endpoint=True)
    x[[3, 50]] = info.min, info.max
    static = dy2st.to_static(extremes_of_prefixes, backend="compiled")
    assert same_bits(static(x, np.zeros((6, 200), dtype)), extremes_of_prefixes(x, np.zeros((6, 200), dtype)))
    assert_compiled(static, x, np.zeros((6, 200), dtype))


def maxima_of_prefixes(x, n):
    total = 0.0
    for i in range(n):
        total += x[:i].max()  # empty at i == 0
    return total


def test_the_max_of_an_empty_array_raises_numpys_value_error_at_the_users_line():
    static = dy2st.to_static(maxima_of_prefixes, backend="compiled")
    x = np.arange(5.0)
    assert static(x, np.array(0)) == 0.0
    assert [e.tier for e in executors_of(static, x, np.array(0))] == ["compiled"]
    with pytest.raises(
        ValueError, match="zero-size array to reduction operation maximum which has no identity"
    ) as raised:
        static(x, np.array(3))
    line = maxima_of_prefixes.__code__.co_firstlineno + 3
    assert f"test_compiled_extremes.py:{line}" in str(raised.value)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_this_machines_numpy_reduction_is_modelled_for_every_layout(dtype):
    order = lane_order(np.dtype(dtype))
    assert order is not None and sorted(order) == list(range(len(order)))
    for length in [1, 8, 9, 63, 64, 65, 1000, 20000]:
        base = tied_values(dtype, 3 * length, length, 0.0005)
        for x in (base[:length], base[1 : length + 1], base[::3], base[:length][::-1]):
            for is_max, reduce in ((True, np.max), (False, np.min)):
                assert same_bits(np.asarray(model_extreme(x, is_max, order)), np.asarray(reduce(x)))
