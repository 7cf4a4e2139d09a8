"""Data-dependent sizes: results whose length depends on the values (boolean masks, ``np.nonzero``
and its family, tensor-bounded slices and ranges) flow through one cached graph, with eager
NumPy's values, shapes, dtypes and errors, in straight-line code, tensor branches and loops."""

from __future__ import annotations

import dataclasses
import operator
import pathlib
import sys

import numpy as np
import pytest

import dy2st

# The factorizations benchmarks/trip_counts.py measures (its Cholesky is the row-slice form; the
# one here has an inner loop over the rows).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
import trip_counts  # noqa: E402
from trip_counts import forward_substitution  # noqa: E402

from dy2st.ir.symbolic import (  # noqa: E402
    DataDependentSize,
    Symbol,
    SymExpr,
    broadcast_shapes,
    data_dependent_size,
    decide,
    infer_size_obliviously,
    is_data_dependent,
    joined_shape,
    recording_guards,
)

# Arrays of one length with different numbers of positive elements: a graph built for the first
# serves every other (their sizes are equal, only the masks' counts differ).
SAME_LENGTH = [
    np.array([1.0, -2.0, 3.0, 5.0, -0.5, 2.0]),
    np.array([-1.0, -2.0, -3.0, -5.0, -0.5, -2.0]),
    np.array([4.0, 2.0, 3.0, 5.0, 0.5, 2.0]),
    np.array([0.0, -2.0, 0.0, 1.0, 0.0, 0.0]),
]


def same(actual, expected, where="result"):
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple) and len(actual) == len(expected), where
        for i, (a, e) in enumerate(zip(actual, expected)):
            same(a, e, f"{where}[{i}]")
        return
    assert type(actual) is type(expected), f"{where}: {type(actual)} vs {type(expected)}"
    if isinstance(expected, np.ndarray):
        assert actual.shape == expected.shape and actual.dtype == expected.dtype, (where, actual, expected)
        np.testing.assert_array_equal(actual, expected)
    else:
        assert actual == expected or (actual != actual and expected != expected), (where, actual, expected)


def check(fn, inputs=SAME_LENGTH, graphs=1):
    """``fn`` converted gives eager's results (and final argument states) on every input, through
    at most ``graphs`` graphs."""
    static = dy2st.to_static(fn)
    for x in inputs:
        args = x if isinstance(x, tuple) else (x,)
        eager_args = [np.copy(a) for a in args]
        static_args = [np.copy(a) for a in args]
        try:
            expected = fn(*eager_args)
        except Exception as error:  # the converted function raises the same class
            with pytest.raises(type(error)):
                static(*static_args)
            continue
        same(static(*static_args), expected)
        for a, e in zip(static_args, eager_args):
            same(a, e, "argument")
    assert static.num_graphs <= graphs


# --- the algebra -----------------------------------------------------------------------------------
def test_a_data_dependent_size_is_at_least_zero_and_nothing_else_is_decided():
    u = data_dependent_size()
    with recording_guards() as guards:
        assert u >= 0 and not u < 0 and u + 1 > 0
        with pytest.raises(DataDependentSize):
            bool(u > 0)
        with pytest.raises(DataDependentSize):
            int(u)
    assert guards == []


def test_size_oblivious_rules_take_sizes_as_equal_and_freshen_what_they_could_change():
    u, v = data_dependent_size(), data_dependent_size()
    n = SymExpr.of(Symbol("n0", 5))
    with recording_guards():
        with pytest.raises(DataDependentSize):
            broadcast_shapes((u,), (v,))
        (joined,) = infer_size_obliviously(lambda: [_Typed(broadcast_shapes((u,), (v,)))])
        assert is_data_dependent(joined.shape[0]) and joined.shape[0].terms not in (u.terms, v.terms)
        # Broadcasting with a size of at least 2 gives that size whichever the data-dependent one is.
        (kept,) = infer_size_obliviously(lambda: [_Typed(broadcast_shapes((n,), (u,)))])
        assert kept.shape == (n,)
        assert decide(u - u, operator.eq)


@dataclasses.dataclass(frozen=True)
class _Typed:
    """A stand-in result type for the algebra tests."""

    shape: tuple


def test_branches_of_different_sizes_join_into_a_fresh_size():
    u = data_dependent_size()
    joined = joined_shape((u, 3), (4, 3))
    assert joined is not None and is_data_dependent(joined[0]) and joined[1] == 3
    assert joined_shape((u,), (4, 3)) is None
    assert joined_shape((5,), (4,)) is None


# --- boolean masks -----------------------------------------------------------------------------------
def mask_read(x):
    return x[x > 0]


def mask_reductions(x):
    m = x > 0
    return np.sum(x[m] * x[m]), x[m].max(), x[~m].size


def mask_of_rows(x):
    A = np.stack([x, x * 2.0, -x])
    return A[:, A[0] > 0], A[A[:, 0] > 0]


def mask_of_two_axes(x):
    A = np.outer(x, x)
    return A[A > 1.0]


def mask_with_other_arrays(x):
    w = np.arange(6.0)
    return x[x > 0] + w[x > 0], x[x > 0] * 2.0 - 1.0


def test_mask_reads_match_eager_through_one_graph():
    for fn in (mask_read, mask_reductions, mask_of_rows, mask_of_two_axes, mask_with_other_arrays):
        check(fn)


def mismatched_masks(x):
    return x[x > 0] + x[x < 0]


def test_masks_of_different_counts_raise_numpys_error_when_they_run():
    check(mismatched_masks)
    with pytest.raises(ValueError, match="could not be broadcast"):
        dy2st.to_static(mismatched_masks)(SAME_LENGTH[0])


def wrong_mask_shape(x):
    return x[np.ones(4, bool)]


def test_a_mask_of_the_wrong_shape_is_numpys_index_error():
    with pytest.raises(IndexError, match="boolean index did not match"):
        dy2st.to_static(wrong_mask_shape)(SAME_LENGTH[0])


def mask_writes(x):
    a = x.copy()
    a[a < 0] = 0.0
    b = x.copy()
    b[b > 1] += 10.0
    c = x.copy()
    c[c > 0] = c[c > 0] * 2.0
    return a, b, c


def mask_write_in_place(x):
    x[x < 0] *= -1.0


def test_mask_writes_keep_the_shape():
    check(mask_writes)
    check(mask_write_in_place)


def length_of_masked(x):
    y = x[x > 0]
    n = len(y)
    if n > 1:
        r = np.zeros(n)
    else:
        r = np.ones(3)
    return r, n, np.ones((n, 2)).sum(axis=0)


def loop_over_masked(x):
    y = x[x > 0]
    total = 0.0
    for i in range(len(y)):
        total = total + y[i] * i
    return total


def test_the_length_of_a_masked_array_is_a_number_when_the_graph_runs():
    check(length_of_masked)
    check(loop_over_masked)


def masks_in_a_tensor_loop(x):
    s = 0.0
    for t in range(3):
        s = s + x[x > t].sum()
    return s


def masks_in_a_tensor_branch(x):
    if x.sum() > 0:
        r = x[x > 0]
    else:
        r = x[x < -1.0] * 2.0
    return r, r.sum()


def test_masks_in_tensor_loops_and_branches():
    check(masks_in_a_tensor_loop)
    check(masks_in_a_tensor_branch)


def elements_of_masked(x):
    y = x[x > 0]
    return y[0], y[-1], y[1:], y[::-1]


def test_indexing_a_masked_array_is_checked_when_it_runs():
    check(elements_of_masked)


# --- the nonzero family, unique, compress, extract, putmask ------------------------------------------
def nonzero_family(x):
    m = x > 0
    (i,) = np.nonzero(m)
    return i, np.flatnonzero(m), np.argwhere(m), np.where(m), m.nonzero(), x[i] - x[m], np.count_nonzero(m)


def nonzero_of_a_matrix(x):
    A = np.outer(x, x) > 1.0
    rows, cols = np.nonzero(A)
    return rows, cols, np.argwhere(A), np.flatnonzero(A), A.sum() + len(rows)


def unique_values(x):
    y = np.round(x)
    values, index, inverse, counts = np.unique(y, return_index=True, return_inverse=True, return_counts=True)
    return np.unique(y), values, index, inverse, counts, values[inverse]


def compress_and_extract(x):
    A = np.stack([x, -x])
    return np.compress(x > 0, A, axis=1), np.compress(x > 0, x), x.compress(x < 0), np.extract(A > 0, A)


def putmask(x):
    a = x.copy()
    np.putmask(a, a < 0, np.array([7.0, 8.0]))
    return a


def test_the_nonzero_family_matches_eager_through_one_graph():
    for fn in (nonzero_family, nonzero_of_a_matrix, unique_values, compress_and_extract, putmask):
        check(fn)


# --- tensor-bounded slices -------------------------------------------------------------------------
def prefix_and_suffix(x, n):
    return x[:n], x[n:].sum(), x[n - 1 : n + 1], x[:n][::-1]


def segment_sums(data, ptr):
    out = np.zeros(len(ptr) - 1)
    for i in range(len(ptr) - 1):
        out[i] = data[ptr[i] : ptr[i + 1]].sum()
    return out


def test_slices_with_tensor_bounds():
    x = np.arange(6.0)
    check(prefix_and_suffix, [(x, np.array(n)) for n in (2, 4, 0, 6, 9)])
    data = np.arange(10.0)
    check(segment_sums, [(data, np.array(p)) for p in ([0, 3, 3, 7, 10], [0, 10, 10, 10, 10], [0, 1, 2, 3, 4])])


def rank_two_update(alpha, C, A, B):
    """syr2k's rows: each slice bound ``i + 1`` is written (and staged) three times."""
    n, m = A.shape
    for i in range(n):
        for k in range(m):
            C[i, : i + 1] += A[: i + 1, k] * alpha * B[i, k] + B[: i + 1, k] * alpha * A[i, k]
    return C


def prefixes_of_two_lengths(a, b, k):
    out = np.zeros(3)
    for i in range(k):
        out[0] += (a[: i + 1] + b[: i + 1]).sum()  # equal only while i + 1 <= len(a), len(b)
        out[1] += (a[: i + 1] * 2.0 + a[i : i + 2][:1].sum()).sum()
        out[2] += (a[1 : i + 2] - b[: i + 1]).sum()
    return out


def sized_slices(fn, *args):
    """The sizes of the 1-d slices with tensor bounds in ``fn``'s graph, in order."""
    graph = dy2st.to_static(fn).graph(*args)
    return [op.results[0].type.shape[0] for op in graph.walk() if op.name == "getitem" and op.results[0].type.ndim == 1]


@pytest.mark.parametrize("backend", ["numpy", "compiled"])
def test_slices_with_the_same_bounds_over_axes_of_one_size_share_their_size(backend):
    """``A[: i + 1, k]`` and ``C[i, : i + 1]`` of 200-element axes have one size, however often
    ``i + 1`` is written: their sum needs no check and the update is one fused group."""
    if backend == "compiled":
        pytest.importorskip("numba")
    rng = np.random.default_rng(3)
    A, B, C = rng.random((7, 6)), rng.random((7, 6)), rng.random((7, 7))  # loops of 5+ iterations roll
    expected = rank_two_update(1.5, C.copy(), A, B)
    same(dy2st.to_static(rank_two_update, backend=backend)(1.5, C.copy(), A, B), expected)
    sizes = sized_slices(rank_two_update, 1.5, C, A, B)
    assert len(sizes) >= 3 and all(is_data_dependent(size) for size in sizes)
    assert len(set(map(str, sizes))) == 1, sizes
    fused = [op for op in dy2st.to_static(rank_two_update).graph(1.5, C, A, B).walk() if op.name == "fused"]
    assert len(fused) == 1, fused


def test_slices_over_axes_of_different_sizes_or_with_other_bounds_keep_their_own_sizes():
    """``a[: i + 1]`` of 4 elements and ``b[: i + 1]`` of 6 differ once ``i + 1 > 4`` (NumPy then
    refuses to add them), ``a[1 : i + 2]`` has other bounds: each keeps a size of its own, checked
    when the op runs."""
    a, b = np.arange(6.0), np.arange(8.0) + 0.5
    sizes = sized_slices(prefixes_of_two_lengths, a, b, 5)  # 5 iterations: a rolled loop
    assert len(set(map(str, sizes))) >= 4, sizes
    for k in (5, 6, 7):  # a's prefixes end at 6 elements, b's at 8: eager raises at k = 7
        check(prefixes_of_two_lengths, [(a, b, k)], graphs=3)


def cholesky(A):
    n = A.shape[0]
    L = np.zeros_like(A)
    for j in range(n):
        L[j, j] = np.sqrt(A[j, j] - L[j, :j] @ L[j, :j])
        for i in range(j + 1, n):
            L[i, j] = (A[i, j] - L[i, :j] @ L[j, :j]) / L[j, j]
    return L


def lu_in_place(A):
    return trip_counts.lu(A.copy())


def edit_distance(a, b):
    D = np.zeros((len(a) + 1, len(b) + 1))
    D[:, 0] = np.arange(len(a) + 1)
    D[0, :] = np.arange(len(b) + 1)
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = 0.0 if a[i - 1] == b[j - 1] else 1.0
            D[i, j] = min(D[i - 1, j] + 1, D[i, j - 1] + 1, D[i - 1, j - 1] + cost)
    return D[-1, -1]


def op_count(fn, *args):
    return sum(1 for _ in dy2st.to_static(fn).graph(*args).walk())


@pytest.mark.parametrize("fn", [forward_substitution, cholesky, trip_counts.cholesky, lu_in_place])
def test_factorizations_roll_into_graphs_whose_size_does_not_depend_on_n(fn):
    def inputs(n):
        rng = np.random.default_rng(n)
        M = rng.random((n, n)) + n * np.eye(n)
        if fn is forward_substitution:
            return np.tril(M), rng.random(n)
        return (M @ M.T,) if fn in (cholesky, trip_counts.cholesky) else (M,)

    for n in (6, 12):
        static = dy2st.to_static(fn)
        np.testing.assert_allclose(static(*inputs(n)), fn(*inputs(n)), rtol=1e-10)
    assert op_count(fn, *inputs(6)) == op_count(fn, *inputs(12))


def test_dynamic_programming_over_a_table_rolls():
    a, b = np.array([1, 2, 3, 4, 2]), np.array([1, 3, 4, 2])
    assert dy2st.to_static(edit_distance)(a, b) == edit_distance(a, b)
    longer = np.array([1, 2, 3, 4, 2, 5, 1, 1, 2])
    assert op_count(edit_distance, a, b) == op_count(edit_distance, longer, b)


# --- errors ------------------------------------------------------------------------------------------
def shape_of_masked_compared(x):
    y = x[x > 0]
    if y.shape[0] > 2:
        return y
    return x


def test_a_data_dependent_size_needed_while_building_is_an_error_at_the_users_line():
    with pytest.raises(dy2st.GraphBuildError) as info:
        dy2st.to_static(shape_of_masked_compared)(SAME_LENGTH[0])
    error = info.value
    assert error.loc.filename == __file__
    assert error.loc.lineno == shape_of_masked_compared.__code__.co_firstlineno + 2
    assert "depends on the values in the arrays" in error.message and "len(x)" in str(error)


def growing_buffer(x, k):
    buf = x[:1]
    for i in range(k):
        buf = np.concatenate([buf, x[x > i]])
    return buf, len(buf)


def test_a_carried_value_that_grows_through_one_graph():
    x = np.arange(5.0)
    check(growing_buffer, [(x, np.array(k)) for k in (0, 1, 3, 5)])


def unused_sum_of_masked_arrays(x, y):
    x[x > 0] + y[y > 0]  # noqa: B018  (eager raises when the counts differ, used or not)
    return x.sum()


def test_an_unused_op_that_numpy_checks_when_it_runs_is_kept():
    static = dy2st.to_static(unused_sum_of_masked_arrays)
    assert static(np.array([1.0, -1.0, 1.0]), np.array([2.0, -2.0, 2.0])) == 1.0
    with pytest.raises(ValueError):  # 3 and 2 elements do not broadcast
        static(np.array([1.0, 1.0, 1.0]), np.array([2.0, -2.0, 2.0]))
