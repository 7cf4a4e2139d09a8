"""Indexed updates run in place where the old value is dead, and copy where it is still read.

Each case names which updates the ``in-place-updates`` pass runs in place (True) and which copy
(False), in program order, and compares the converted call with eager NumPy: results, dtypes and
the final state of every argument (``assert_like_eager``).
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import dy2st
from dy2st.ir.core import IN_PLACE_UPDATE, WHILE_LOOP
from dy2st.ir.opdefs import get_op
from dy2st.ops.indexing import COPY_IF_OVERLAPPING
from dy2st.ops.shape import COPY
from eager_parity import assert_like_eager

RNG = np.random.default_rng(11)
W = RNG.standard_normal((4, 3))


def decisions(graph) -> list[bool]:
    """For every functional update of ``graph`` in program order: does it run in place?"""
    return [IN_PLACE_UPDATE in op.attrs for op in graph.walk() if get_op(op.name).updates_operand is not None]


def check(fn, *args, expected: list[bool], backend: str | None = None):
    """``fn`` converts with these in-place decisions and behaves exactly as eagerly."""
    static = dy2st.to_static(fn) if backend is None else dy2st.to_static(fn, backend=backend)
    assert decisions(static.graph(*args)) == expected
    assert_like_eager(fn, *args, converted=static)
    return static


# --- straight-line code: the old value is dead ----------------------------------------------------
def rows_written_one_by_one(x):
    A = np.zeros((4, 3))
    for i in range(4):
        A[i] = x * i
    return A


def slices_updated_with_augmented_assignment(x):
    A = np.outer(x, x) + 1.0
    for i in range(1, 3):
        A[i, :i] -= A[i - 1, :i] * 0.5
    return A


def test_every_row_update_of_a_fresh_array_runs_in_place():
    check(rows_written_one_by_one, RNG.standard_normal(3), expected=[True] * 4)


def test_augmented_slice_updates_run_in_place():
    # `A[i, :i] -= v` updates A through the view, then assigns the same values again: simplify
    # keeps one update per iteration of the unrolled loop.
    check(slices_updated_with_augmented_assignment, RNG.standard_normal(3), expected=[True] * 2)


def shifted_by_an_overlapping_slice(x):
    A = x * 2.0
    A[1:] = A[:-1]  # NumPy reads the overlapping value before writing it
    return A


def test_an_update_whose_value_overlaps_its_target_runs_in_place():
    check(shifted_by_an_overlapping_slice, np.arange(6.0), expected=[True])


# --- the old value is still read: copy -----------------------------------------------------------
def old_value_returned_alongside(x):
    A = x * 2.0
    B = A * 1.0  # a new array in eager code; simplified to A itself in the graph
    A[0] = 0.0
    return A, B


def old_view_read_after(x):
    A = x * 2.0
    row = A[0] * 1.0  # simplified to the view A[0] of the old A
    A[0] = 0.0
    return A, row


def two_names_for_one_zeros(x):
    A = np.zeros((4, 3))
    B = np.zeros((4, 3))  # two arrays, in eager code and in the graph (CSE merges no new arrays)
    A[0] = x
    return A, B


def old_value_read_by_a_later_update(x):
    A = x * 2.0
    B = A * 1.0
    B[1] = 5.0  # reads the old A: copies
    A[0] = 0.0  # the last reader of the old A: in place
    return A, B


def test_an_old_value_returned_alongside_the_new_one_is_copied():
    check(old_value_returned_alongside, RNG.standard_normal(5), expected=[False])


def test_an_old_view_read_after_the_update_is_checked_and_copied_when_it_runs():
    # row is A[0], the very part the update writes: copy_if_overlapping copies A when it runs.
    static = check(old_view_read_after, RNG.standard_normal((3, 4)), expected=[True])
    assert COPY_IF_OVERLAPPING in [op.name for op in static.graph(RNG.standard_normal((3, 4))).walk()]


def test_two_equal_new_arrays_each_keep_their_array():
    check(two_names_for_one_zeros, RNG.standard_normal(3), expected=[True])


def test_only_the_last_reader_of_an_old_value_overwrites_it():
    check(old_value_read_by_a_later_update, RNG.standard_normal(5), expected=[False, True])


def index_array_updated_through_itself(x):
    p = (x * 0).astype(np.int64) + np.arange(x.size)[::-1]
    p[p] = 7  # the index is the updated array: copied, so the index is the old p
    return p


def test_an_update_indexed_by_its_own_array_copies():
    check(index_array_updated_through_itself, RNG.standard_normal(5), expected=[False])


# --- arguments, captures, constants -------------------------------------------------------------
def updates_its_argument(x):
    x[0] = 5.0
    x[1:3] *= 2.0
    return x.sum()


def updates_a_copy_of_its_argument(x):
    y = x * 1.0  # simplified to x: but eager code leaves x alone
    y[0] = 5.0
    return y


def updates_argument_and_its_alias(x):
    y = x * 1.0  # simplified to x
    x[1] = 2.0  # x is updated in eager code too: written back after the call
    y[0] = 5.0
    return y


def updates_and_returns_its_argument(x):
    x[0] = 5.0
    return x


def test_an_argument_the_function_updates_is_updated_in_its_own_buffer():
    # `x[1:3] *= 2.0` writes through the view, then assigns the same values: one update.
    static = check(updates_its_argument, RNG.standard_normal(4), expected=[True] * 2)
    x = np.arange(4.0)
    static(x)
    assert x.tolist() == [5.0, 2.0, 4.0, 3.0]


def test_an_argument_the_function_does_not_update_is_never_overwritten():
    x = RNG.standard_normal(4)
    check(updates_a_copy_of_its_argument, x, expected=[False])


def test_an_argument_updated_besides_a_simplified_copy_ends_as_in_eager_code():
    check(updates_argument_and_its_alias, RNG.standard_normal(4), expected=[False, True])


def test_a_returned_argument_is_the_callers_array_itself_as_eagerly():
    static = check(updates_and_returns_its_argument, RNG.standard_normal(4), expected=[True])
    x = np.zeros(3)
    result = static(x)
    assert result is x
    assert x.tolist() == [5.0, 0.0, 0.0]


def updates_a_global():
    W[0, 0] += 1.0
    return W.sum()


def test_a_global_the_function_updates_is_updated_in_place():
    before = W.copy()
    static = dy2st.to_static(updates_a_global)
    assert decisions(static.graph()) == [True]
    total = static()
    assert W[0, 0] == before[0, 0] + 1.0 and total == pytest.approx(W.sum())
    W[:] = before


def test_a_read_only_argument_the_function_updates_raises_as_eagerly():
    x = np.zeros(3)
    x.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        dy2st.to_static(updates_its_argument)(x)
    assert x.tolist() == [0.0, 0.0, 0.0]


# --- branches -----------------------------------------------------------------------------------
def updated_in_one_branch(x, t):
    A = x * 2.0
    if t > 0:
        A[0] = 1.0
    else:
        A += 1.0
    return A


def old_value_read_after_the_branch(x, t):
    A = x * 2.0
    B = A * 1.0
    if t > 0:
        A[0] = 1.0
    return A + B


def test_an_update_in_a_branch_runs_in_place():
    for t in (1, -1):
        check(updated_in_one_branch, RNG.standard_normal(3), np.array(t), expected=[True])


def test_an_update_in_a_branch_copies_what_is_read_after_the_branch():
    for t in (1, -1):
        check(old_value_read_after_the_branch, RNG.standard_normal(3), np.array(t), expected=[False])


# --- tensor loops -------------------------------------------------------------------------------
def rows_in_a_tensor_loop(x, n):
    A = np.zeros((6, 3))
    i = 0
    while i < n:
        A[i] = x * i
        i += 1
    return A


def recurrence_in_a_tensor_loop(A, n):
    i = 1
    while i < n:
        A[i, :] = np.tanh(A[i - 1, :]) * 0.5 + 0.1
        i += 1
    return A[-1]


def old_value_read_later_in_the_body(x, n):
    A = np.zeros((6, 3))
    total = np.zeros(3)
    i = 0
    while i < n:
        before = A * 1.0
        A[i] = x * i
        total = total + before[i]
        i += 1
    return A, total


def literal_start_in_a_tensor_loop(x, n):
    A = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    i = 0
    while i < n:
        A[i] = A[i] + x
        i += 1
    return A


def start_also_read_after_the_loop(x, n):
    B = np.zeros((6, 3))
    A = B * 1.0  # simplified to B: the loop must not write into B's array
    i = 0
    while i < n:
        A[i] = x * i
        i += 1
    return A, B


def test_a_loop_carried_update_runs_in_place_at_every_iteration():
    static = check(rows_in_a_tensor_loop, RNG.standard_normal(3), np.array(6), expected=[True])
    assert "copy" not in static.executor_source(RNG.standard_normal(3), np.array(6))


def test_a_recurrence_over_an_argument_runs_in_its_buffer():
    # The NumPy tier's code: the compiled tier takes this loop too (tanh on a small array), and
    # "auto" times it on the NumPy tier with a wrapper that renumbers the locals named below.
    static = check(
        recurrence_in_a_tensor_loop, RNG.standard_normal((5, 4)), np.array(5), expected=[True], backend="numpy"
    )
    check(recurrence_in_a_tensor_loop, RNG.standard_normal((5, 4)), np.array(0), expected=[True])
    source = static.executor_source(RNG.standard_normal((5, 4)), np.array(5))
    # Updated in the caller's array, the new row computed straight into it (update-destinations):
    # the write-back after the call finds nothing to copy.
    assert "= w0[w1, :, ]" in source and "out=v8" in source and " is not a0:" in source


def copy_simplified_inside_a_loop(x, n):
    B = x * 2.0
    total = np.zeros(3)
    i = 0
    while i < n:
        T = B * 1.0  # simplified to B, defined before the loop: the next iteration reads it again
        T[0] = i
        total = total + T
        i += 1
    return total, B


def subtracted_from_a_view_of_an_argument_in_a_loop(A, n):
    acc = np.zeros(4)
    keep = A * 1.0  # simplified to the argument A
    A[3] = 1.0  # A is updated: written back after the call
    i = 0
    while i < n:
        acc = acc - keep[3]  # a view of the old A, read at every iteration
        i += 1
    return acc


def test_an_update_in_a_loop_of_a_value_defined_before_it_copies():
    check(copy_simplified_inside_a_loop, RNG.standard_normal(3), np.array(3), expected=[False])
    static = check(
        subtracted_from_a_view_of_an_argument_in_a_loop, RNG.standard_normal((4, 4)), np.array(3), expected=[False]
    )
    assert elementwise_in_place(static.graph(RNG.standard_normal((4, 4)), np.array(3))) == []


def test_a_loop_reading_the_old_value_after_the_update_copies():
    check(old_value_read_later_in_the_body, RNG.standard_normal(3), np.array(6), expected=[False])


def loop_copies(graph) -> int:
    """How many ``copy`` ops run just before a loop (the pass adds them)."""
    return sum(
        1
        for block in _blocks(graph)
        for before, after in zip(block.ops, block.ops[1:])
        if before.name == COPY and after.name == WHILE_LOOP and before.results[0] in after.operands
    )


def _blocks(graph):
    yield graph.body
    for op in graph.walk():
        for region in op.regions:
            yield region.block


@pytest.mark.parametrize("fn", [literal_start_in_a_tensor_loop, start_also_read_after_the_loop])
def test_a_loop_whose_start_is_not_its_own_copies_it_once_before_the_loop(fn):
    shape = 2 if fn is literal_start_in_a_tensor_loop else 3
    for n in (0, 2, 3):
        static = check(fn, RNG.standard_normal(shape), np.array(n), expected=[True])
    assert loop_copies(static.graph(RNG.standard_normal(shape), np.array(3))) == 1


# --- other functional updates -------------------------------------------------------------------
def complex_parts_replaced(x):
    z = x * (1.0 + 2.0j)
    z.real = x * 3.0
    z.imag[0] = -1.0
    return z


def test_assigning_the_parts_of_a_complex_array_runs_in_place():
    # z.real = v stages as z with its real part replaced by (z.real with [...] = v): the inner
    # update writes the view z.real while z is read again after it, so it runs in place after a
    # copy_if_overlapping that copies when it runs (the part is all of z.real); the outer one
    # writes the parts into z. z.imag[0] = v likewise.
    static = check(complex_parts_replaced, RNG.standard_normal(4), expected=[True] * 4)
    names = [op.name for op in static.graph(RNG.standard_normal(4)).walk()]
    assert names.count(COPY_IF_OVERLAPPING) == 2


# --- memory -------------------------------------------------------------------------------------
def unrolled_recurrence(A):
    for i in range(1, A.shape[0]):
        A[i, :] = np.tanh(A[i - 1, :]) * 0.5 + 0.1
    return A[-1].sum()


def traced_peak(fn, *args) -> int:
    """Bytes allocated at the peak of one call, above what was allocated before it."""
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        fn(*args)
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_a_row_loop_keeps_no_copies_and_no_old_temporaries():
    A = RNG.standard_normal((200, 200))
    # The Python-range loop rolls into one while_loop (docs/shapes.md): one update, in place. The
    # NumPy tier's memory: the compiled tier takes this loop too (our tanh on rows of 200), where
    # `* 0.5 + 0.1` cancels near zero and its tanh's ulp become many of the result's.
    static = check(unrolled_recurrence, A, expected=[True], backend="numpy")
    static(A)
    # One row of temporaries at a time, as eagerly: not a copy of A per row, nor the
    # temporaries of all 199 rows kept until the function returns.
    row = A[0].nbytes
    assert traced_peak(static, A) < 8 * row
    assert traced_peak(unrolled_recurrence, A) < 8 * row


# --- elementwise updates of the caller's arrays ---------------------------------------------------
def elementwise_in_place(graph) -> list[str]:
    """The elementwise ops of ``graph`` the pass writes into an operand, in program order."""
    return [op.name for op in graph.walk() if IN_PLACE_UPDATE in op.attrs and get_op(op.name).ufunc is not None]


def centered_in_the_callers_array(data):
    mean = data.mean(axis=0)
    data -= mean
    return data.T @ data


def updated_with_another_argument(x, y):
    x += y
    return x[0]


def updated_with_its_transpose(x):
    x += x.T  # NumPy reads the overlapping x.T before writing x
    return x[0]


def updated_through_a_view(x):
    row = x[1]
    row += 1.0  # the view's layout is not the one eager code gives a new result: copied
    return row.sum()


def updated_while_an_old_copy_is_read(x):
    y = x * 1.0  # simplified to x: the old x
    x += 1.0
    return y


def updated_in_a_tensor_loop(x, n):
    i = 0
    while i < n:
        x *= 0.5
        i += 1
    return x[-1]


def fresh_array_updated(x):
    A = x * 2.0
    A += 1.0  # a fresh array: the memory planner's in-place, not this pass's
    return A


def test_an_augmented_update_of_an_argument_runs_in_the_callers_array():
    static = check(centered_in_the_callers_array, RNG.standard_normal((6, 3)), expected=[])
    assert elementwise_in_place(static.graph(RNG.standard_normal((6, 3)))) == ["subtract"]
    static = check(updated_with_another_argument, RNG.standard_normal((4, 4)), RNG.standard_normal(4), expected=[])
    assert elementwise_in_place(static.graph(RNG.standard_normal((4, 4)), RNG.standard_normal(4))) == ["add"]
    x = np.arange(4.0).reshape(2, 2)
    static(x, np.ones(2))
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_an_augmented_update_of_an_argument_with_its_own_transpose_runs_in_place():
    static = check(updated_with_its_transpose, RNG.standard_normal((4, 4)), expected=[])
    assert elementwise_in_place(static.graph(RNG.standard_normal((4, 4)))) == ["add"]
    x = np.arange(4.0).reshape(2, 2)
    static(x)
    assert x.tolist() == [[0.0, 3.0], [3.0, 6.0]]


def test_an_augmented_update_through_a_view_of_an_argument_is_not_written_into_the_view():
    static = check(updated_through_a_view, RNG.standard_normal((3, 4)), expected=[True])
    assert elementwise_in_place(static.graph(RNG.standard_normal((3, 4)))) == []


def test_an_augmented_update_of_an_argument_still_read_copies():
    static = check(updated_while_an_old_copy_is_read, RNG.standard_normal(3), expected=[])
    assert elementwise_in_place(static.graph(RNG.standard_normal(3))) == []


def test_an_augmented_update_of_an_argument_in_a_tensor_loop_runs_in_place():
    for n in (0, 3):
        static = check(updated_in_a_tensor_loop, RNG.standard_normal((4, 2)), np.array(n), expected=[])
    assert elementwise_in_place(static.graph(RNG.standard_normal((4, 2)), np.array(3))) == ["multiply"]


def test_elementwise_updates_of_fresh_arrays_are_left_to_the_memory_planner():
    static = check(fresh_array_updated, RNG.standard_normal(3), expected=[])
    assert elementwise_in_place(static.graph(RNG.standard_normal(3))) == []


# --- errors -------------------------------------------------------------------------------------
def fails_after_an_update(x, i):
    x[0] = 5.0
    x[i] = 1.0  # IndexError at run time for i out of range
    return x.sum()


def test_an_update_in_place_before_a_failing_op_stays_in_the_callers_array_as_eagerly():
    # docs/semantics.md: updates run in the caller's buffer before the error stay, as in eager code.
    check(fails_after_an_update, np.zeros(3), np.array(7), expected=[True, True])
    x = np.zeros(3)
    with pytest.raises(IndexError):
        dy2st.to_static(fails_after_an_update)(x, np.array(7))
    assert x.tolist() == [5.0, 0.0, 0.0]


def views_updated_in_an_unrolled_loop(X, x):
    # Differential generator, views seed 45011 (Python conditions): the returned value, updated
    # in place in a buffer whose first bytes it shared with a larger temporary, sized that buffer
    # to itself, and the larger temporary's reshape failed when the graph ran.
    row = X[0]
    lo = x[:3]
    hi = x[3:]
    for _ in range(3):
        row[:] = row * 0.5
        lo += hi
    return lo


def test_an_output_never_takes_a_buffer_a_larger_value_shares():
    assert_like_eager(views_updated_in_an_unrolled_loop, np.arange(20.0).reshape(4, 5), np.arange(6.0))
