"""``x.max()`` and ``x.min()`` of a 1-d array inside compiled loops, with NumPy's results bit for bit.

The maximum of a float array is one of its elements, but which one matters where equal values have
different bits: ``np.max([0.0, -0.0])``. NumPy's SIMD reduction (its ``loops_minmax``) takes the
first element into every lane of a vector accumulator, folds the following whole vectors into it
lane by lane (a later element wins a tie), picks a lane by a fixed tree of comparisons, then folds
the rest one by one (again a later element wins a tie). Any NaN met makes the result NaN: the
default quiet NaN when it was in the vectors, the first NaN met otherwise. Strided and reversed
arrays go through NumPy's scalar loop unrolled by eight (``_numpy_extreme_unrolled``).

The width of the vectors and the tree depend on the machine NumPy runs on, so this module measures
them (``lane_order``): it asks NumPy which of two tied lanes wins, for every pair, and checks the
resulting model against NumPy on arrays of ties and NaNs. Where no model fits, float max/min stay
on the NumPy tier. On the machine this was written on (AVX-512), the model gave NumPy's bits, the
NaNs' included, in 30 000 max and min reductions of random arrays of up to 30 000 elements,
contiguous, strided and reversed.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np


# The functions below run both as Python (``lane_order`` checks them against NumPy) and, their source
# written into each generated module (``EXTREMES_PRELUDE``), as Numba functions: one algorithm.
def _numpy_extreme_step(kept, new, is_max):
    """One step of NumPy's max/min reduction (its x86 scalar operation): a NaN kept stays, a
    strictly better value stays, and otherwise (a tie included) the new element wins."""
    if kept != kept:
        return kept
    if is_max:
        return kept if kept > new else new
    return kept if kept < new else new


def _numpy_extreme_of_vectors(a, is_max, lane_order, nan):
    """NumPy's vector reduction of a contiguous ``a``: a[0] in every lane, the following whole
    vectors folded in lane by lane, then one lane picked, the first of ``lane_order`` holding the
    extreme (``nan`` if a lane holds a NaN). Returns it and the index of the first element left."""
    lanes = len(lane_order)
    whole = (a.shape[0] - 1) // lanes * lanes
    acc = np.empty(lanes, a.dtype)
    acc[:] = a[0]
    for k in range(whole):
        acc[k % lanes] = _numpy_extreme_step(acc[k % lanes], a[1 + k], is_max)
    best = acc[0]
    for lane in range(lanes):
        value = acc[lane]
        if value != value:
            return nan, 1 + whole
        if (value > best) if is_max else (value < best):
            best = value
    for lane in lane_order:
        if acc[lane] == best:
            best = acc[lane]  # of the tied lanes, the one NumPy's tree picks
            break
    return best, 1 + whole


def _numpy_extreme_unrolled(a, is_max):
    """NumPy's reduction of a strided (or reversed) ``a`` of at least nine elements: eight running
    values from a[1:9], folded in blocks of eight, combined by a tree of pairs into a[0]. Returns
    the result and the index of the first element left."""
    m = np.empty(8, a.dtype)
    m[:] = a[1:9]
    rest = 9
    while rest + 8 <= a.shape[0]:
        for k in range(8):
            m[k] = _numpy_extreme_step(m[k], a[rest + k], is_max)
        rest += 8
    for k in (0, 2, 4, 6):
        m[k] = _numpy_extreme_step(m[k], m[k + 1], is_max)
    m[0] = _numpy_extreme_step(m[0], m[2], is_max)
    m[4] = _numpy_extreme_step(m[4], m[6], is_max)
    return _numpy_extreme_step(a[0], _numpy_extreme_step(m[0], m[4], is_max), is_max), rest


def _numpy_extreme(a, is_max, lane_order, nan):
    """NumPy's max (``is_max``) or min of a non-empty 1-d array, the element NumPy picks among ties.
    ``lane_order``: the lanes of its vector accumulator by the priority its final tree gives each on
    a tie, ``(0,)`` without vectors; ``nan``: the NaN it gives when one was in the vectors. The
    elements after the vectors or blocks are folded in one by one."""
    n = a.shape[0]
    result, rest = a[0], 1
    if len(lane_order) > 1 and a.strides[0] == a.itemsize:
        if n - 1 >= len(lane_order):
            result, rest = _numpy_extreme_of_vectors(a, is_max, lane_order, nan)
    elif n >= 9:
        result, rest = _numpy_extreme_unrolled(a, is_max)
    for k in range(rest, n):
        result = _numpy_extreme_step(result, a[k], is_max)
    return result


def _numpy_extreme_of_numbers(a, is_max, lane_order, nan):
    """``_numpy_extreme``, in one plain pass where it can: equal numbers other than zeros have the
    same bits, so where the extreme is a number other than 0, whichever element holding it the
    plain pass keeps is NumPy's. Ties of 0.0 and -0.0, and NaNs, take NumPy's order."""
    best = a[0]
    unordered = best != best
    for k in range(1, a.shape[0]):
        value = a[k]
        unordered |= value != value
        if (value > best) if is_max else (value < best):
            best = value
    if unordered or best == 0:
        return _numpy_extreme(a, is_max, lane_order, nan)
    return best


def _numba_source(function, options: str) -> str:
    """The source of one of the functions above, decorated for the generated module."""
    return f"\n\n@numba.njit({options})\n{inspect.getsource(function)}"


EXTREMES_PRELUDE = _numba_source(_numpy_extreme_step, 'inline="always"') + "".join(
    _numba_source(f, "")
    for f in (_numpy_extreme_of_vectors, _numpy_extreme_unrolled, _numpy_extreme, _numpy_extreme_of_numbers)
)


def model_extreme(x: np.ndarray, is_max: bool, order: tuple[int, ...]) -> np.generic:
    """NumPy's max/min of ``x`` as compiled code computes it (in Python)."""
    return _numpy_extreme(x, is_max, order, x.dtype.type(np.nan))


# Vector widths to try: none (one by one), then SSE to AVX-512 lanes of float64 and float32.
_WIDTHS = (1, 2, 4, 8, 16, 32)


@functools.cache
def lane_order(dtype: np.dtype) -> tuple[int, ...] | None:
    """The lanes of NumPy's max/min reduction of ``dtype`` on this machine, by the priority its
    final tree gives each on a tie (``(0,)``: no vectors); None where no model fits NumPy."""
    for width in _WIDTHS:
        order = (0,) if width == 1 else _tie_order(np.dtype(dtype), width)
        if order is not None and _model_fits(np.dtype(dtype), order):
            return order
    return None


def _tie_order(dtype: np.dtype, lanes: int) -> tuple[int, ...] | None:
    """The lanes sorted by how many ties each wins against the others, in an array that fills each
    lane with one element (NumPy's first element is -1, which every lane's element beats)."""
    wins = [0] * lanes
    for i in range(lanes):
        for j in range(i + 1, lanes):
            a = np.full(lanes + 1, -1.0, dtype)
            a[1 + i], a[1 + j] = 0.0, -0.0
            winner = j if np.signbit(np.max(a)) else i
            wins[winner] += 1
    order = tuple(sorted(range(lanes), key=lambda lane: -wins[lane]))
    return order if sorted(wins) == list(range(lanes)) else None  # a total order: each lane beats those below


def _model_fits(dtype: np.dtype, order: tuple[int, ...]) -> bool:
    """Does the model give NumPy's max and min (bits, but any NaN for a NaN) on arrays of many
    lengths, contiguous, strided and reversed, whose extremes are tied zeros of both signs (some
    with a NaN)?"""
    rng = np.random.default_rng(0)
    for length in [*range(1, 40), 63, 64, 65, 100, 129, 200, 300]:
        for nan_share in (0.0, 0.01):
            for other in (-1.0, 1.0):  # below the zeros for max, above for min
                pool = np.array([other, 2 * other, -0.0, 0.0, np.nan], dtype)
                weights = np.array([3, 1, 2, 2, 8 * nan_share]) / (8 + 8 * nan_share)
                base = rng.choice(pool, size=2 * length, p=weights)
                for x in (base[:length], base[::2], base[:length][::-1]):
                    for is_max, reduce in ((True, np.max), (False, np.min)):
                        if not _same(model_extreme(x, is_max, order), reduce(x)):
                            return False
    return True


def _same(model: np.generic, numpy: np.generic) -> bool:
    if np.isnan(numpy):
        return bool(np.isnan(model))
    return bool(np.asarray(model).tobytes() == np.asarray(numpy).tobytes())
