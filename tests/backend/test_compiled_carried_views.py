"""Recursive filters on the compiled tier: loops that carry views of the columns or rows they wrote
(``y_prev = forward[:, j]``), store float64 results of float32 images times float64 coefficients
into float32 arrays, and run their stores after an overlap check shown never to copy
(``backend/numba/carried_views.py``). Results have eager NumPy's bits; a carried view the caller
could see (returned) keeps the loop on the NumPy tier, where it is eager's view; overlapping
stores, which the check copies for, stay there too. A carried view read or handed on after a store
into what it holds (a view of the very column stored into next) is not rolled at all: eager's view
shows the store, a carried value would not, so the loop is unrolled (a tensor ``while`` refused)."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

import dy2st
from dy2st.backend.numba.executor import TieredExecutor
from dy2st.backend.numba.support import COMPILED_LOOP
from dy2st.ir.opcodes import WHILE_LOOP

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "benchmarks"))
from kernels import BY_NAME  # noqa: E402

pytest.importorskip("numba")

deriche = BY_NAME["deriche"].function


# --- recursive filters, written as NumPy users write them -------------------------------------------
def filter_columns(alpha, image):
    """A second-order recursive filter along each row, one column at a time (Deriche's first
    pass): float64 coefficients times float32 columns, stored into a float32 array."""
    k = (1.0 - np.exp(-alpha)) ** 2
    a1, a2 = k, k * np.exp(-alpha) * (alpha - 1.0)
    b1, b2 = 2.0 ** (-alpha), -np.exp(-2.0 * alpha)
    forward = np.zeros_like(image)
    x_prev = np.zeros(image.shape[0], dtype=image.dtype)
    y_prev = np.zeros(image.shape[0], dtype=image.dtype)
    y_prev2 = np.zeros(image.shape[0], dtype=image.dtype)
    for j in range(image.shape[1]):
        forward[:, j] = a1 * image[:, j] + a2 * x_prev + b1 * y_prev + b2 * y_prev2
        x_prev = image[:, j]
        y_prev2 = y_prev
        y_prev = forward[:, j]
    return forward


def filter_rows_backward(alpha, image):
    """The same filter run backward along each column, one row at a time."""
    a3 = np.exp(-alpha) * (alpha + 1.0)
    b2 = -np.exp(-2.0 * alpha)
    backward = np.zeros_like(image)
    x_next = np.zeros(image.shape[1], dtype=image.dtype)
    y_next = np.zeros(image.shape[1], dtype=image.dtype)
    y_next2 = np.zeros(image.shape[1], dtype=image.dtype)
    for i in range(image.shape[0] - 1, -1, -1):
        backward[i, :] = a3 * x_next + 0.5 * y_next + b2 * y_next2
        x_next = image[i, :]
        y_next2 = y_next
        y_next = backward[i, :]
    return backward


def filter_negative_indices(image, gain):
    """Columns from the last one back, indexed with negative ints."""
    out = np.zeros_like(image)
    prev = np.zeros(image.shape[0], dtype=image.dtype)
    for j in range(image.shape[1]):
        out[:, -j - 1] = image[:, -j - 1] + gain * prev
        prev = out[:, -j - 1]
    return out


def previous_column_read_after(image):
    """The carried view is read after the loop (a new array made from it): nothing shows it is
    a view."""
    forward = np.zeros_like(image)
    y_prev = np.zeros(image.shape[0], dtype=image.dtype)
    for j in range(image.shape[1]):
        forward[:, j] = image[:, j] + np.float64(0.5) * y_prev
        y_prev = forward[:, j]
    return forward, y_prev * 2.0


def previous_column_returned(image):
    """The carried view is returned: the caller sees its ``.base``, which must be ``forward``."""
    forward = np.zeros_like(image)
    y_prev = np.zeros(image.shape[0], dtype=image.dtype)
    for j in range(image.shape[1]):
        forward[:, j] = image[:, j] + np.float64(0.5) * y_prev
        y_prev = forward[:, j]
    return forward, y_prev


def previous_column_written_after(image):
    """The carried view written into after the loop: eager code changes ``forward`` through it."""
    forward = np.zeros_like(image)
    y_prev = np.zeros(image.shape[0], dtype=image.dtype)
    for j in range(image.shape[1]):
        forward[:, j] = image[:, j] + np.float64(0.5) * y_prev
        y_prev = forward[:, j]
    y_prev[0] = 7.0
    return forward


def wrapping_column(image):
    """``j - 1`` at the first iteration is column -1: in a one-column array, the column the
    previous iteration's view holds is the one stored into (the check copies)."""
    forward = np.zeros_like(image)
    y_prev = np.ones(image.shape[0], dtype=image.dtype)
    for j in range(image.shape[1] + 1):
        forward[:, j - 1] = image[:, j - 1] + np.float64(0.5) * y_prev
        y_prev = forward[:, j - 1]
    return forward


def same_column_each_time(image, steps):
    """The view of the column stored into at every iteration, carried on as ``y_prev2`` past the
    next store into that column, which eager's view shows: unrolled."""
    forward = np.ones_like(image)
    y_prev = np.zeros(image.shape[0], dtype=image.dtype)
    y_prev2 = np.zeros(image.shape[0], dtype=image.dtype)
    for _ in range(steps):
        forward[:, 0] = forward[:, 0] + np.float64(0.5) * y_prev + y_prev2
        y_prev2 = y_prev
        y_prev = forward[:, 0]
    return forward, y_prev2 + 0.0


def seeded_from_the_first_column(image):
    """The carried view starts as a view of the array stored into (column 0)."""
    forward = image.copy()
    y_prev = forward[:, 0]
    for j in range(1, image.shape[1]):
        forward[:, j] = image[:, j] + np.float64(0.5) * y_prev
        y_prev = forward[:, j]
    return forward


# --- helpers --------------------------------------------------------------------------------------
def same_bits(actual, expected) -> bool:
    a, e = np.asarray(actual), np.asarray(expected)
    return a.dtype == e.dtype and a.shape == e.shape and a.tobytes() == e.tobytes()


def loops_marked(static, *args) -> list[bool]:
    """For each top-level ``while_loop`` of the graph: did the compiled-regions pass mark it?"""
    graph = static.graph(*args)
    return [bool(op.attrs.get(COMPILED_LOOP)) for op in graph.body.ops if op.name == WHILE_LOOP]


def tier_of(static, *args) -> str:
    executors = [c.executor for entries in static._cache.values() for c in entries]
    (executor,) = executors
    return executor.tier if isinstance(executor, TieredExecutor) else "numpy"


def run_both(fn, *args):
    """The compiled call's result and eager's, each on its own copies of the arguments."""
    static = dy2st.to_static(fn, backend="compiled")
    copies = [[a.copy() if isinstance(a, np.ndarray) else a for a in args] for _ in range(2)]
    return static, static(*copies[0]), fn(*copies[1])


def image(shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).random(shape, dtype=np.float64).astype(dtype)


# --- the filters compile, with eager's bits ---------------------------------------------------------
@pytest.mark.parametrize("shape", [(16, 40), (160, 120), (1, 30), (33, 17)])
def test_deriche_compiles_every_loop_with_numpys_bits(shape):
    img = image(shape)
    static, result, expected = run_both(deriche, 0.25, img)
    marked = loops_marked(static, 0.25, img)
    assert marked and all(marked)  # one row or column: those loops are unrolled
    assert tier_of(static, 0.25, img) == "compiled"
    assert same_bits(result, expected)


def test_deriche_with_nans_infinities_and_large_values():
    img = image((20, 24))
    img[3, 5], img[7, 0], img[0, 23], img[19, 12] = np.nan, np.inf, -np.inf, np.float32(3e38)
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf, and float32 overflow on store
        static, result, expected = run_both(deriche, 0.25, img)
    assert tier_of(static, 0.25, img) == "compiled"
    assert same_bits(result, expected)


def test_float64_results_stored_into_float32_round_as_numpy_casts():
    # float64 sums of float32 columns: most do not fit float32, and the store rounds each.
    img = image((64, 48))
    static, result, expected = run_both(filter_columns, 0.7, img)
    assert loops_marked(static, 0.7, img) == [True]
    assert result.dtype == np.float32
    assert same_bits(result, expected)
    assert "np.float64(" in static.compiled_source(0.7, img)  # the elements are cast to the loop's dtype


def test_float64_images_need_no_cast():
    img = image((24, 30), np.float64)
    static, result, expected = run_both(filter_columns, 0.25, img)
    assert loops_marked(static, 0.25, img) == [True]
    assert same_bits(result, expected)


def test_a_backward_filter_along_columns_by_rows():
    img = image((30, 9))
    static, result, expected = run_both(filter_rows_backward, 0.5, img)
    assert loops_marked(static, 0.5, img) == [True]
    assert same_bits(result, expected)


def test_negative_indices():
    img = image((7, 25))
    static, result, expected = run_both(filter_negative_indices, img, np.float64(0.3))
    assert loops_marked(static, img, np.float64(0.3)) == [True]
    assert same_bits(result, expected)


@pytest.mark.parametrize("shape", [(0, 30), (5, 0)])
def test_empty_images(shape):
    img = image(shape)
    _, result, expected = run_both(deriche, 0.25, img)
    assert same_bits(result, expected)


# --- carried views: what the caller sees ------------------------------------------------------------
def test_a_carried_view_only_read_after_the_loop_compiles():
    img = image((6, 40))
    static, (forward, doubled), (eager_forward, eager_doubled) = run_both(previous_column_read_after, img)
    assert loops_marked(static, img) == [True]
    assert same_bits(forward, eager_forward) and same_bits(doubled, eager_doubled)


def test_a_returned_carried_view_stays_on_the_numpy_tier_and_is_a_view_of_the_result():
    img = image((6, 40))
    static, (forward, y_prev), (eager_forward, eager_y_prev) = run_both(previous_column_returned, img)
    assert loops_marked(static, img) == [False]
    assert same_bits(forward, eager_forward) and same_bits(y_prev, eager_y_prev)
    assert eager_y_prev.base is eager_forward
    assert y_prev.base is forward  # as eager's: Numba would hand back another base
    y_prev[0] = -1.0
    assert forward[0, -1] == -1.0


def test_a_carried_view_written_after_the_loop_changes_the_array_as_eagerly():
    img = image((6, 40))
    _, result, expected = run_both(previous_column_written_after, img)
    assert same_bits(result, expected)


# --- overlap checks: no-ops compile, copies stay on the NumPy tier ----------------------------------
def while_loops(static, *args) -> int:
    """How many ``while_loop`` ops the graph has, at any depth."""
    return sum(op.name == WHILE_LOOP for op in static.graph(*args).walk())


def test_a_store_into_the_column_a_carried_view_holds_gives_eagers_result():
    # Eager's y_prev2 is the view of column 0 that the next store changes: the loop is unrolled,
    # where each view follows the array, not rolled with the column as it was (a wrong answer).
    img = image((5, 30))
    for backend in ("numpy", "compiled"):
        static = dy2st.to_static(same_column_each_time, backend=backend)
        result, expected = static(img.copy(), 25), same_column_each_time(img.copy(), 25)
        assert all(same_bits(r, e) for r, e in zip(result, expected))
        assert while_loops(static, img, 25) == 0
    (note,) = static.graph(img, 25).notes
    assert "unrolled (25 iterations)" in note and "'y_prev' holds, from the previous iteration, a view" in note


def same_row_forwarded(A, steps):
    """The row version: ``prev = A[0]`` is carried on as ``prev2`` past the next store into row 0."""
    prev = np.zeros(A.shape[1], dtype=A.dtype)
    prev2 = np.zeros(A.shape[1], dtype=A.dtype)
    for _ in range(steps):
        A[0] = 0.5 * A[0] + prev2 + 1.0
        prev2 = prev
        prev = A[0]
    return A, prev2 * 1.0


def same_column_read_after_the_store(image, steps):
    """The carried view is read after the store into its column: eager's read sees the store."""
    forward = image.copy()
    y_prev = np.zeros(image.shape[0], dtype=image.dtype)
    total = np.zeros(image.shape[0], dtype=image.dtype)
    for _ in range(steps):
        forward[:, 0] = forward[:, 0] * np.float32(0.5) + np.float32(1.0)
        total = total + y_prev
        y_prev = forward[:, 0]
    return forward, total


def view_of_the_carried_view_read_after_the_store(A, steps):
    """A view of the carried view (``prev[1:]``), taken before the store into row 0, read after."""
    prev = np.zeros(A.shape[1], dtype=A.dtype)
    acc = np.zeros(A.shape[1] - 1, dtype=A.dtype)
    for _ in range(steps):
        tail = prev[1:]
        A[0] = A[0] * np.float32(0.5) + np.float32(1.0)
        acc = acc + tail
        prev = A[0]
    return A, acc


def same_column_read_before_the_store(image, steps):
    """The carried view is only read before the store into its column: the column as it was is
    what eager code reads too, so the loop stays rolled."""
    forward = image.copy()
    y_prev = np.zeros(image.shape[0], dtype=image.dtype)
    for _ in range(steps):
        forward[:, 0] = forward[:, 0] + np.float64(0.25) * y_prev
        y_prev = forward[:, 0]
    return forward, y_prev + 0.0


def both_columns_stored(image, steps):
    """Views of column 0 handed on after a store into column 0 (and one into column 1)."""
    forward = image.copy()
    y_prev = np.zeros(image.shape[0], dtype=image.dtype)
    y_prev2 = np.zeros(image.shape[0], dtype=image.dtype)
    for _ in range(steps):
        forward[:, 1] = forward[:, 1] + np.float64(0.5) * y_prev + y_prev2
        forward[:, 0] = forward[:, 0] * np.float32(0.5)
        y_prev2 = y_prev
        y_prev = forward[:, 0]
    return forward, y_prev2 + 0.0


def other_column_forwarded(image, steps):
    """Views of column 0 handed on past stores into column 1 only, which never change them."""
    forward = image.copy()
    y_prev = np.zeros(image.shape[0], dtype=image.dtype)
    y_prev2 = np.zeros(image.shape[0], dtype=image.dtype)
    for _ in range(steps):
        forward[:, 1] = forward[:, 1] * np.float32(0.5) + np.float64(0.5) * y_prev + y_prev2
        y_prev2 = y_prev
        y_prev = forward[:, 0]
    return forward, y_prev2 + 0.0


@pytest.mark.parametrize("backend", ["numpy", "compiled"])
@pytest.mark.parametrize(
    "fn, shape",
    [
        (same_row_forwarded, (3, 7)),
        (same_column_read_after_the_store, (6, 4)),
        (both_columns_stored, (5, 3)),
        (view_of_the_carried_view_read_after_the_store, (3, 6)),
    ],
)
def test_carried_views_past_a_store_into_them_unroll_with_eagers_result(fn, shape, backend):
    # Stores into what a carried view holds, before it is read or handed on: unrolled, eager's bits.
    img = image(shape)
    static = dy2st.to_static(fn, backend=backend)
    result, expected = static(img.copy(), 12), fn(img.copy(), 12)
    assert all(same_bits(r, e) for r, e in zip(result, expected))
    assert while_loops(static, img, 12) == 0
    (note,) = static.graph(img, 12).notes
    assert "unrolled (12 iterations)" in note and "holds, from the previous iteration, a view" in note


@pytest.mark.parametrize("fn", [same_column_read_before_the_store, other_column_forwarded])
def test_carried_views_no_store_changes_before_they_are_read_stay_rolled(fn):
    # Read before the store into their column, or handed on past stores into another column
    # (1 against 0, a constant distance): the graph's carried values are eager's views' contents.
    img = image((5, 30))
    for backend in ("numpy", "compiled"):
        static = dy2st.to_static(fn, backend=backend)
        result, expected = static(img.copy(), 25), fn(img.copy(), 25)
        assert all(same_bits(r, e) for r, e in zip(result, expected))
        assert while_loops(static, img, 25) == 1


def test_a_tensor_while_loop_refuses_a_carried_view_past_a_store_into_it():
    # No Python range to unroll: a clear refusal naming the variable, not the column as it was.
    def until_large(A, limit):
        prev = np.zeros(A.shape[1], dtype=A.dtype)
        prev2 = np.zeros(A.shape[1], dtype=A.dtype)
        while A[0, 0] < limit:
            A[0] = A[0] + prev2 + 1.0
            prev2 = prev
            prev = A[0]
        return A

    A = image((3, 4), np.float64)
    until_large(A.copy(), 50.0)  # eager code runs
    static = dy2st.to_static(until_large)
    with pytest.raises(dy2st.GraphBuildError, match="'prev' holds, from the previous iteration, a view of 'A'"):
        static(A.copy(), 50.0)


def test_an_index_that_wraps_around_onto_the_previous_column():
    # Column j - 1 is -1 at the first iteration, the last column, far from column 0 of the next.
    img = image((4, 30))
    static, result, expected = run_both(wrapping_column, img)
    assert loops_marked(static, img) == [True]
    assert same_bits(result, expected)


def test_in_one_column_the_wrapped_index_is_the_previous_column():
    # Column -1 and column 0 are one column: the view the first iteration hands on is the column
    # the second stores into (two iterations: the loop is unrolled, each view taken anew).
    img = image((4, 1))
    _, result, expected = run_both(wrapping_column, img)
    assert same_bits(result, expected)


def test_an_out_of_range_column_raises_index_error_as_eagerly():
    img = image((4, 30))

    def past_the_end(image):
        forward = np.zeros_like(image)
        y_prev = np.zeros(image.shape[0], dtype=image.dtype)
        for j in range(image.shape[1] + 1):
            forward[:, j] = image[:, j] + np.float64(0.5) * y_prev
            y_prev = forward[:, j]
        return forward

    static = dy2st.to_static(past_the_end, backend="compiled")
    with pytest.raises(IndexError):
        past_the_end(img.copy())
    with pytest.raises(IndexError, match="index out of bounds"):
        static(img.copy())
    assert loops_marked(static, img) == [True]


def test_a_view_of_the_stored_array_taken_before_the_loop():
    # The staging unrolls this loop (the view may see the stores): eager's result either way.
    img = image((5, 30))
    _, result, expected = run_both(seeded_from_the_first_column, img)
    assert same_bits(result, expected)
