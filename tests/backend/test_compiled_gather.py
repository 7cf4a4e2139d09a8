"""Gathers by integer arrays (``x[idx]``) inside compiled loops, and the sparse matrix-vector
product they make compile (``spmv``: ``values[a:b] @ x[cols[a:b]]`` per CSR row).

A gather is written out as a loop over the index array: every index is checked against the first
axis of ``x`` before it is read (an index out of range raises NumPy's IndexError, naming the
user's line), a negative one counts from the end, the result has NumPy's dtype and shape, and the
index array may have any integer dtype and shape. The dot product of the gathered vector keeps
NumPy's BLAS call, so spmv gives eager's bits, not just values within a rounding bound.
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

import dy2st
from dy2st.backend.numba.executor import TieredExecutor
from dy2st.backend.numba.support import COMPILED_LOOP, compiled_gather
from eager_parity import assert_like_eager

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "benchmarks"))
from kernels import BY_NAME  # noqa: E402

pytest.importorskip("numba")

spmv = BY_NAME["spmv"].function  # the benchmark's kernel, as a NumPy user writes it


def copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def compiled_executor(static, *args) -> TieredExecutor:
    """The executor of ``static``'s one graph after a call with ``args``: its loops compiled."""
    static(*copies(args))
    (entry,) = [c for entries in [*static._cache.values(), *static._dynamic_cache.values()] for c in entries]
    executor = entry.executor
    assert isinstance(executor, TieredExecutor) and executor.tier == "compiled", getattr(executor, "failures", None)
    return executor


def gathers_compiled(fn, *args):
    """``fn`` on the compiled tier, its gathers inside a compiled loop (asserted), for ``args``."""
    static = dy2st.to_static(fn, backend="compiled")
    executor = compiled_executor(static, *args)
    assert any(compiled_gather(op) for loop in executor.loops for op in loop.walk()), static.compiled_source(*args)
    return static


def compiled_like_eager(fn, *args):
    """The gathers compiled, and results, exceptions and final arguments as eager's."""
    return assert_like_eager(fn, *args, converted=gathers_compiled(fn, *args))


def same_bits(actual, expected):
    """Same type, shape, dtype and bits (``same_value`` admits math functions' 4 ulp)."""
    assert type(actual) is type(expected)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    assert actual.tobytes() == expected.tobytes(), f"{actual} != {expected}"


# --- kernels (loops of five iterations or more: shorter ones are unrolled) ----------------------------
def gathered_sums(x, idx, out):
    for i in range(out.shape[0]):
        out[i] = x[idx[: i % idx.shape[0] + 1]].sum() * i + x[idx[i % idx.shape[0] :]][0]
    return out


def gathered_parts(x, idx, out):
    # A gather by a part of the index array, stored into a part of the result.
    for i in range(out.shape[0]):
        out[: min(i, idx.shape[0])] = x[idx[:i]] * 0.5
    return out


def gathered_tail_sums(x, idx, out):
    for i in range(out.shape[0]):
        out[i] = x[idx[i:]].sum()
    return out


def gathered_rows(A, idx, out):
    # Rows of a matrix: a gather by a vector gives a matrix (idx.shape + A.shape[1:]).
    for i in range(out.shape[0]):
        rows = A[idx[i % idx.shape[0] :]]
        out[i] = rows[0, i % rows.shape[1]] + rows[-1, -1] * rows.shape[0]
    return out


def gathered_by_matrix(x, idx, out):
    # An index of two axes gives a result of its shape.
    for i in range(out.shape[0]):
        g = x[idx[i % idx.shape[0] :]]
        out[i] = g[0, -1] * g.shape[0] + g[-1, 0]
    return out


def gathered_column(A, idx, out):
    # From a strided view: the column ``A[:, k]``.
    for k in range(A.shape[1]):
        out[k] = A[:, k][idx[k % idx.shape[0] :]].max()
    return out


def last_gathered(x, idx, n):
    # A gathered array carried to the next iteration and out of the loop: a new array, as eager's.
    g = x[idx[:1]]
    count = 0
    for i in range(n):
        count += g.shape[0]
        g = x[idx[: i % (idx.shape[0] + 1)]]
    return g, count


def gather_after_store(x, idx):
    # The gather reads what the iteration before wrote.
    for i in range(1, x.shape[0]):
        x[i] = x[idx[: i % idx.shape[0] + 1]].sum() * 0.25
    return x


def mismatched_product(values, x, a, b, c, d):
    s = 0.0
    for i in range(5):
        s = s + values[a:b] @ x[c:d]
    return s


def random_csr(rng, rows, cols, dtype=np.float64, empty_rows=0.2):
    counts = rng.integers(0, min(cols, 9) + 1, rows)
    counts[rng.random(rows) < empty_rows] = 0
    row_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    col_idx = np.concatenate([rng.choice(cols, c, replace=False) for c in counts]).astype(np.int64)
    values = (rng.standard_normal(int(row_ptr[-1])) * 10.0 ** rng.integers(-3, 4, int(row_ptr[-1]))).astype(dtype)
    return row_ptr, col_idx, values, rng.standard_normal(cols).astype(dtype)


# --- values ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gathered_values_are_numpys(dtype):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(9).astype(dtype)
    compiled_like_eager(gathered_sums, x, np.array([3, 0, 8, 3, 1, 1]), np.zeros(7, dtype))
    compiled_like_eager(gathered_parts, x, np.array([4, 2, 2, 7, 0]), np.zeros(7, dtype))


def test_negative_indices_count_from_the_end():
    x = np.arange(10.0) ** 2
    compiled_like_eager(gathered_sums, x, np.array([-1, -10, 4, -3]), np.zeros(6))
    compiled_like_eager(gathered_parts, x, np.array([-1, -10, 9, 0, -5]), np.zeros(7))


@pytest.mark.parametrize("index_dtype", [np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64])
def test_every_integer_dtype_indexes(index_dtype):
    x = np.linspace(-1.0, 2.0, 7)
    idx = np.array([6, 0, 3, 3, 5], dtype=index_dtype)
    if np.dtype(index_dtype).kind == "i":
        idx[1] = -2
    compiled_like_eager(gathered_sums, x, idx, np.zeros(6))
    compiled_like_eager(gathered_parts, x, idx, np.zeros(7))


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int8, np.bool_, np.complex128])
def test_the_result_has_the_data_dtype(dtype):
    x = (np.arange(8) * 3 - 5).astype(dtype)
    for n in (5, 6, 9):
        compiled_like_eager(last_gathered, x, np.array([7, -1, 2, 2]), n)


def test_rows_and_index_matrices_give_numpys_shapes():
    rng = np.random.default_rng(2)
    A = rng.standard_normal((5, 3)).astype(np.float32)
    compiled_like_eager(gathered_rows, A, np.array([4, -5, 2, 2], dtype=np.int32), np.zeros(7, np.float32))
    compiled_like_eager(gathered_by_matrix, np.arange(6.0), np.array([[5, 0, -1], [2, 2, 3]]), np.zeros(6))
    compiled_like_eager(gathered_column, rng.standard_normal((6, 5)), np.array([5, 1, -6]), np.zeros(5))


def test_a_gathered_array_carried_out_is_a_new_array():
    x = np.arange(6.0)
    result, count = compiled_like_eager(last_gathered, x, np.array([1, 5, 0]), 8)
    assert not np.shares_memory(result, x) and count == last_gathered(x, np.array([1, 5, 0]), 8)[1]
    x[:] = -1.0
    same_bits(result, np.array([1.0, 5.0, 0.0]))


def test_a_gather_reads_the_values_stored_before_it():
    compiled_like_eager(gather_after_store, np.arange(1.0, 8.0), np.array([0, 5, 1, 1]))


def swapped_by_lists(a, n):
    for i in range(n):
        a[[0, 2]] = a[[2, 0]] * 0.5 + i
    return a


def test_a_gather_by_a_constant_list_runs_as_eager():
    # Its template holds a concrete index array, not a tensor: the NumPy tier runs it.
    assert_like_eager(
        swapped_by_lists, np.arange(4.0), 6, converted=dy2st.to_static(swapped_by_lists, backend="compiled")
    )


# --- empty arrays and indices out of range ------------------------------------------------------------
def test_empty_index_arrays_give_empty_results():
    x = np.arange(4.0)
    compiled_like_eager(gathered_tail_sums, x, np.zeros(0, np.int64), np.zeros(6))
    compiled_like_eager(gathered_tail_sums, np.zeros(0), np.zeros(0, np.uint8), np.zeros(6))
    compiled_like_eager(gathered_tail_sums, x, np.array([3, -4]), np.zeros(6))  # empty from the third on
    compiled_like_eager(gathered_parts, x, np.zeros(0, np.int32), np.zeros(6))
    compiled_like_eager(last_gathered, x, np.zeros(0, np.int32), 6)
    compiled_like_eager(last_gathered, np.zeros(0), np.zeros(0, np.int64), 6)


@pytest.mark.parametrize(
    "bad",
    [
        np.array([1, 6], np.int64),
        np.array([-7, 0], np.int64),
        np.array([0, 200], np.uint8),
        np.array([-128, 1], np.int8),
        np.array([2**63 + 5, 1], np.uint64),  # past int64: compared unsigned, never wrapped negative
    ],
)
def test_an_index_out_of_range_raises_index_error_at_the_users_line(bad):
    x = np.arange(6.0)
    static = gathers_compiled(gathered_sums, x, np.array([1, 2], dtype=bad.dtype), np.zeros(5))
    with pytest.raises(IndexError):
        gathered_sums(x, bad, np.zeros(5))
    with pytest.raises(IndexError) as raised:
        static(x, bad, np.zeros(5))
    message = str(raised.value)
    line = gathered_sums.__code__.co_firstlineno + 2
    assert "index out of bounds for axis 0 in gather(" in message and f"test_compiled_gather.py:{line}" in message


def test_an_index_out_of_range_into_an_empty_array_raises():
    static = gathers_compiled(gathered_sums, np.arange(3.0), np.array([0]), np.zeros(5))
    with pytest.raises(IndexError):
        gathered_sums(np.zeros(0), np.array([0]), np.zeros(5))
    with pytest.raises(IndexError):
        static(np.zeros(0), np.array([0]), np.zeros(5))


# --- spmv ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_spmv_gives_eagers_bits_over_random_csr_matrices(seed, dtype):
    rng = np.random.default_rng(seed)
    static = gathers_compiled(spmv, *random_csr(rng, int(rng.integers(5, 40)), int(rng.integers(1, 30)), dtype))
    for _ in range(4):  # new sizes: one more graph, of symbolic sizes
        args = random_csr(rng, int(rng.integers(5, 40)), int(rng.integers(1, 30)), dtype, empty_rows=rng.random())
        same_bits(static(*copies(args)), spmv(*args))
    assert all(entry.executor.loops for entries in static._dynamic_cache.values() for entry in entries)


def test_spmv_with_only_empty_rows_and_no_rows():
    x = np.arange(3.0)
    empty = (np.zeros(7, np.int64), np.zeros(0, np.int64), np.zeros(0), x)
    same_bits(gathers_compiled(spmv, *empty)(*empty), spmv(*empty))
    none = (np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0), x)
    same_bits(dy2st.to_static(spmv, backend="compiled")(*none), spmv(*none))


def test_spmv_at_the_benchmarks_size_compiles():
    # 10 000 nonzeros, more than SMALL_ARRAY_ELEMENTS: the parts are only gathered and dotted by
    # BLAS, which cost per element what NumPy's code costs, so their size does not count.
    args = BY_NAME["spmv"].make("small")
    same_bits(gathers_compiled(spmv, *args)(*copies(args)), spmv(*args))


def test_spmv_with_a_column_out_of_range_raises_index_error():
    row_ptr, col_idx, values, x = random_csr(np.random.default_rng(7), 8, 6, empty_rows=0.0)
    static = gathers_compiled(spmv, row_ptr, col_idx, values, x)
    col_idx[-1] = 6
    with pytest.raises(IndexError):
        spmv(row_ptr, col_idx, values, x)
    with pytest.raises(IndexError, match="index out of bounds for axis 0 in gather"):
        static(row_ptr, col_idx, values, x)


def test_products_of_parts_whose_sizes_differ_raise_value_error():
    values, x = np.arange(8.0), np.arange(8.0) + 1
    static = dy2st.to_static(mismatched_product, backend="compiled")
    same_bits(static(values, x, 1, 4, 5, 8), mismatched_product(values, x, 1, 4, 5, 8))
    assert compiled_executor(static, values, x, 1, 4, 5, 8).loops
    for bounds in [(1, 4, 5, 7), (0, 0, 2, 3)]:
        with pytest.raises(ValueError):
            mismatched_product(values, x, *bounds)
        with pytest.raises(ValueError, match="matmul: Input operand 1 has a mismatch in its core dimension 0"):
            static(values, x, *bounds)
    # spmv whose values are shorter than its columns: the last row's parts differ
    row_ptr, col_idx, vals, xs = random_csr(np.random.default_rng(3), 6, 5, empty_rows=0.0)
    static = gathers_compiled(spmv, row_ptr, col_idx, vals, xs)
    with pytest.raises(ValueError):
        spmv(row_ptr, col_idx, vals[:-1], xs)
    with pytest.raises(ValueError):
        static(row_ptr, col_idx, vals[:-1].copy(), xs)


# --- how data-dependent sizes count against the small-array limits ---------------------------------
def exp_of_rows(row_ptr, values, out):
    for i in range(out.shape[0]):
        out[i] = np.exp(values[row_ptr[i] : row_ptr[i + 1]]).sum()
    return out


def test_a_part_counts_as_the_array_it_is_cut_from():
    # A math function on parts of a 2000-element array: each part may be the whole array, over
    # SMALL_OWN_MATH_ELEMENTS, so the loop stays on the NumPy tier however short the rows are.
    row_ptr = np.array([0, 3, 7, 7, 9, 12], np.int64)
    for size, compiles in [(2000, False), (100, True)]:
        args = (row_ptr, np.linspace(0, 1, size), np.zeros(5))
        static = dy2st.to_static(exp_of_rows, backend="compiled")
        assert_like_eager(exp_of_rows, *args, converted=static)
        marked = [op for op in static.graph(*args).walk() if op.attrs.get(COMPILED_LOOP)]
        assert bool(marked) == compiles, size
