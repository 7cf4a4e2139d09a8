"""Matrix products and fused elementwise groups inside compiled loops, computed by loops of their
own into buffers the loop reuses.

Float products sum in the natural order (no BLAS, no fused multiply-adds): each element is within
the error bound of a sum of products, ``|computed - exact| <= gamma_k * (|a| @ |b|)`` with
``gamma_k = k u / (1 - k u)``, as NumPy's (BLAS) result is; so the two are within twice that of
each other. Integer products are exact, with NumPy's wrap-around. Buffers reused across
iterations never overwrite a value that is still read: carried values use two buffers in turn,
and a value carried on twice gets a new array at each iteration.
"""

from __future__ import annotations

import numpy as np
import pytest

import dy2st
from dy2st.backend.numba.executor import TieredExecutor
from dy2st.backend.numba.products import ACCUMULATE_INLINE_MOST
from eager_parity import same_value

pytest.importorskip("numba")


def compiled(fn, *args, **options):
    """``fn`` converted for the compiled tier, with its loops compiled for ``args``."""
    static = dy2st.to_static(fn, backend="compiled", **options)
    static(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    (entry,) = [c for entries in [*static._cache.values(), *static._dynamic_cache.values()] for c in entries]
    assert isinstance(entry.executor, TieredExecutor) and entry.executor.tier == "compiled", getattr(
        entry.executor, "failures", None
    )
    return static


def assert_within_product_bound(actual, expected, a, b):
    """``actual`` and ``expected`` (NumPy's ``a @ b``) each within the error bound of the sums."""
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    k = a.shape[-1]
    u = np.finfo(actual.dtype).eps / 2
    gamma = k * u / (1 - k * u)
    bound = 2 * gamma * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
    error = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
    assert np.all(error <= bound), f"largest error {np.max(error - bound)} beyond the bound"


# --- kernels ------------------------------------------------------------------------------------
def rows_times_matrix(xs, W, out):
    for i in range(xs.shape[0]):
        out[i] = xs[i] @ W
    return out


def matrix_times_rows(A, xs, out):
    for i in range(xs.shape[0]):
        out[i] = A @ xs[i]
    return out


def matrices_times_matrix(As, B, out):
    for i in range(As.shape[0]):
        out[i] = As[i] @ B
    return out


FORMS = {
    "vector @ matrix": (rows_times_matrix, lambda rng, n, dt: (rng(6, n), rng(n, n + 3)), lambda xs, W: xs @ W),
    "matrix @ vector": (matrix_times_rows, lambda rng, n, dt: (rng(n + 2, n), rng(6, n)), lambda A, xs: xs @ A.T),
    "matrix @ matrix": (
        matrices_times_matrix,
        lambda rng, n, dt: (rng(6, 3, n), rng(n, 5)),
        lambda As, B: np.stack([a @ B for a in As]),
    ),
}


def random_arrays(dtype, seed):
    rng = np.random.default_rng(seed)

    def make(*shape):
        if np.dtype(dtype).kind == "f":
            return (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)).astype(dtype)
        info = np.iinfo(dtype)  # the whole range: products and sums wrap around
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)

    return make


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32, np.int8, np.uint8])
@pytest.mark.parametrize("inner", [0, 1, 3, 8, 13])
def test_products_in_loops_are_within_the_error_bound_or_exact_for_integers(form, dtype, inner):
    kernel, make, reference = FORMS[form]
    a, b = make(random_arrays(dtype, inner), inner, dtype)
    expected_rows = reference(a, b)
    out = np.zeros_like(expected_rows)
    static = compiled(kernel, a, b, out)
    assert "np.dot(" not in static.compiled_source(a, b, out)
    actual = static(a, b, out.copy())
    with np.errstate(over="ignore"):
        eager = kernel(a, b, out.copy())
    if np.dtype(dtype).kind in "iu":
        same_value(actual, eager)  # exact, wrapped around as NumPy's
    else:
        assert_within_product_bound(actual, eager, *((a, b) if form != "matrix @ vector" else (b, a.T)))


def test_products_above_the_crossover_keep_blas():
    rng = np.random.default_rng(3)
    A, xs = rng.standard_normal((40, 40)), rng.standard_normal((5, 40))
    static = compiled(matrix_times_rows, A, xs, np.zeros((5, 40)))
    assert "np.dot(" in static.compiled_source(A, xs, np.zeros((5, 40)))
    same_value(static(A, xs, np.zeros((5, 40))), matrix_times_rows(A, xs, np.zeros((5, 40))))


def test_products_of_symbolic_sizes_choose_at_run_time():
    static = dy2st.to_static(rows_times_matrix, backend="compiled", dynamic=True)
    for n, m in [(4, 5), (70, 80)]:  # below and above the crossover
        rng = np.random.default_rng(n)
        xs, W = rng.standard_normal((3, n)), rng.standard_normal((n, m))
        assert_within_product_bound(static(xs, W, np.zeros((3, m))), xs @ W, xs, W)
    assert "<= 4096" in static.compiled_source(xs, W, np.zeros((3, m)))


def test_a_product_of_mismatched_data_dependent_sizes_raises_numpys_error_class():
    def kernel(x, W, k):
        s = 0.0
        for i in range(3):
            s = s + (x[:k] @ W)[0]
        return s

    x, W = np.ones(6), np.ones((4, 2))
    with pytest.raises(ValueError):
        kernel(x, W, 5)
    with pytest.raises(ValueError):
        dy2st.to_static(kernel, backend="compiled")(x, W, 5)


# --- buffers reused across iterations -----------------------------------------------------------
def rnn(xs, h, Wx, Wh, b):
    for i in range(xs.shape[0]):
        h = np.tanh(xs[i] @ Wx + h @ Wh + b)
    return h


def rnn_with_previous_state(xs, h, W):
    prev = h
    for i in range(xs.shape[0]):
        prev, h = h, np.tanh(xs[i] + h @ W) + prev * 0.5  # h two iterations back is still read
    return h, prev


def carried_twice(xs, h, W):
    g = h
    for i in range(xs.shape[0]):
        a = h @ W + xs[i]
        h = a
        g = a * 0.5
    return h, g


def kept_every_other_iteration(xs, h, W):
    for i in range(xs.shape[0]):
        if i % 2 == 0:
            h = h @ W + xs[i]
    return h


def updated_in_place_after_the_product(xs, h, W):
    for i in range(xs.shape[0]):
        h = h @ W * 0.5
        h[0] = xs[i, 0]
    return h


def stored_each_iteration(xs, W, out):
    for i in range(xs.shape[0]):
        u = xs[i] @ W
        out[i] = u * 2.0 - 1.0
    return out


def broadcast_rows(Ms, v, acc):
    for i in range(Ms.shape[0]):
        acc = acc + Ms[i] * v - acc * 0.25  # (4, 5) with (5,): an element loop over the matrix
    return acc


def rnn_backward(xs, Wh, dh):
    # The backward loop of the RNN: outer products of expand_dims accumulated into a matrix, and
    # a matrix @ vector product carried on.
    gw = np.zeros_like(Wh)
    for i in range(xs.shape[0]):
        v = dh * (1 - xs[i] * xs[i])
        gw += np.expand_dims(xs[i], 1) * np.expand_dims(v, 0)
        dh = Wh @ v
    return gw, dh


ALIASING = {
    "rnn backward": (rnn_backward, lambda r: (np.tanh(r(12, 6)), r(6, 6), r(6))),
    "rnn": (rnn, lambda r: (r(20, 6), r(6), r(6, 6), r(6, 6), r(6))),
    "previous state": (rnn_with_previous_state, lambda r: (r(9, 5), r(5), r(5, 5))),
    "carried twice": (carried_twice, lambda r: (r(7, 4), r(4), r(4, 4))),
    "every other iteration": (kept_every_other_iteration, lambda r: (r(7, 4), r(4), r(4, 4) * 0.5)),
    "updated in place": (updated_in_place_after_the_product, lambda r: (r(7, 4), r(4), r(4, 4))),
    "stored": (stored_each_iteration, lambda r: (r(7, 4), r(4, 3), np.zeros((7, 3)))),
    "broadcast": (broadcast_rows, lambda r: (r(6, 4, 5), r(5), np.zeros((4, 5)))),
}


@pytest.mark.parametrize("name", ALIASING)
def test_values_computed_into_reused_buffers_are_never_overwritten_while_read(name):
    kernel, make = ALIASING[name]
    rng = np.random.default_rng(17)
    args = make(lambda *shape: rng.standard_normal(shape) * 0.5)
    static = compiled(kernel, *args)
    fresh = [a.copy() for a in args]
    actual, eager = static(*fresh), kernel(*[a.copy() for a in args])
    for got, want in zip(
        actual if isinstance(actual, tuple) else (actual,), eager if isinstance(eager, tuple) else (eager,)
    ):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    # The caller's arrays are not written (the buffers are the compiled function's own).
    for before, after in zip(args, fresh):
        if not np.shares_memory(before, after) and kernel is not stored_each_iteration:
            same_value(after, before)


def test_the_rnn_step_computes_into_two_buffers_in_turn_and_calls_no_blas():
    rng = np.random.default_rng(1)
    args = (
        rng.standard_normal((20, 32)),
        np.zeros(32),
        rng.standard_normal((32, 32)),
        rng.standard_normal((32, 32)),
        rng.standard_normal(32),
    )
    source = compiled(rnn, *args).compiled_source(*args)
    assert "np.dot(" not in source
    assert "np.empty(" not in source.split("for ")[1]  # every array allocated before the loop
    swaps = [line.strip() for line in source.splitlines() if line.strip().startswith("b") and ", b" in line]
    assert swaps, source  # ``b3, b4 = b4, b3``: the carried state's two buffers


def test_results_of_one_call_are_not_changed_by_the_next():
    rng = np.random.default_rng(2)
    args = (
        rng.standard_normal((5, 4)),
        np.zeros(4),
        rng.standard_normal((4, 4)),
        rng.standard_normal((4, 4)),
        rng.standard_normal(4),
    )
    static = compiled(rnn, *args)
    first = static(*args)
    kept = first.copy()
    static(*args)
    same_value(first, kept)


def test_buffers_of_symbolic_sizes_follow_the_sizes_of_each_call():
    static = dy2st.to_static(rnn, backend="compiled", dynamic=True)
    for hidden in (6, 9, 4):
        rng = np.random.default_rng(hidden)
        args = (
            rng.standard_normal((7, hidden)),
            np.zeros(hidden),
            *(rng.standard_normal((hidden, hidden)) for _ in range(2)),
        )
        args = (*args, rng.standard_normal(hidden))
        np.testing.assert_allclose(static(*args), rnn(*args), rtol=1e-12, atol=1e-15)
    source = static.compiled_source(*args)
    assert "np.dot(" in source and "<= 4096" in source  # the sizes decide at run time
    assert ".shape[0] < " in source  # a buffer allocated anew when it is too small


def sparse_rows_times_vector(row_ptr, col_idx, values, x):
    y = np.empty(row_ptr.size - 1)
    for i in range(row_ptr.size - 1):
        start, stop = row_ptr[i], row_ptr[i + 1]
        y[i] = values[start:stop] @ x[col_idx[start:stop]]
    return y


def gathered_row_blocks(A, idx, starts, out):
    for i in range(starts.shape[0] - 1):
        g = A[idx[starts[i] : starts[i + 1]]] * 0.5
        out[i] = g.sum()
    return out


def test_arrays_whose_size_changes_each_iteration_are_views_of_one_grown_buffer():
    """A gather of each row's columns (sizes 3, 0, 5, 1, 5, 2: growing, shrinking, empty) is
    computed into the start of one flat buffer, allocated again only when a row is longer than
    any before; a 2-d gather views it reshaped."""
    rng = np.random.default_rng(5)
    row_ptr = np.cumsum([0, 3, 0, 5, 1, 5, 2])
    col_idx = rng.integers(0, 9, row_ptr[-1])
    values, x = rng.standard_normal(row_ptr[-1]), rng.standard_normal(9)
    static = compiled(sparse_rows_times_vector, row_ptr, col_idx, values, x)
    np.testing.assert_allclose(
        static(row_ptr, col_idx, values, x), sparse_rows_times_vector(row_ptr, col_idx, values, x), rtol=1e-14
    )
    source = static.compiled_source(row_ptr, col_idx, values, x)
    assert ".shape[0] < " in source and "b1[:" in source, source
    A, idx = rng.standard_normal((12, 3)), rng.integers(-12, 12, 12)
    starts = np.array([0, 3, 3, 8, 9, 12])
    static = compiled(gathered_row_blocks, A, idx, starts, np.zeros(5))
    same_value(static(A, idx, starts, np.zeros(5)), gathered_row_blocks(A, idx, starts, np.zeros(5)))
    assert ".reshape((" in static.compiled_source(A, idx, starts, np.zeros(5))


def test_without_scipy_only_products_that_may_call_blas_keep_their_loop_on_numpy(monkeypatch):
    from dy2st.backend.numba import support

    monkeypatch.setattr(support, "numba_blas_available", lambda: False)
    rng = np.random.default_rng(4)
    xs, W = rng.standard_normal((6, 5)), rng.standard_normal((5, 5))
    compiled(rows_times_matrix, xs, W, np.zeros((6, 5)))  # written out: no BLAS needed
    A, rows = rng.standard_normal((40, 40)), rng.standard_normal((5, 40))
    static = dy2st.to_static(matrix_times_rows, backend="compiled")
    same_value(static(A, rows, np.zeros((5, 40))), matrix_times_rows(A, rows, np.zeros((5, 40))))
    (entry,) = [c for entries in static._cache.values() for c in entries]
    assert not isinstance(entry.executor, TieredExecutor)  # np.dot above the crossover: NumPy tier


# --- transposed row blocks and products added into a sum -----------------------------------------
def gram_by_blocks(X, block):
    G = np.zeros((X.shape[1], X.shape[1]))
    for b in range(X.shape[0] // block):
        rows = X[block * b : block * b + block]
        G = G + rows.T @ rows
    return G


@pytest.mark.parametrize("columns", [3, 40])  # below the crossover (loops) and above (np.dot)
def test_a_transposed_block_of_rows_is_a_view_the_compiled_loop_multiplies(columns):
    X = np.random.default_rng(columns).standard_normal((48, columns))
    static = compiled(gram_by_blocks, X, 8)
    assert ".T" in static.compiled_source(X, 8)
    actual = static(X, 8)
    expected = gram_by_blocks(X, 8)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-12 * np.abs(X).max() ** 2 * 48)


def blocked_weight_gradient(wh, xs, h):
    for i in range(xs.shape[0]):
        h = np.tanh(h @ wh + xs[i])
    return (h * h).sum()


@pytest.mark.parametrize("n", [6, 96])  # below ACCUMULATE_INLINE_MOST (loops) and above (BLAS)
def test_the_backward_loop_adds_each_blocks_products_into_the_gradient(n):
    rng = np.random.default_rng(n)
    wh, xs, h = (
        rng.standard_normal((n, n)) * 0.4 / np.sqrt(n),
        rng.standard_normal((90, n)),
        rng.standard_normal(n) * 0.1,
    )
    grad = dy2st.grad(dy2st.to_static(blocked_weight_gradient, backend="compiled"))
    got = grad(wh, xs, h)
    reference = dy2st.grad(dy2st.to_static(blocked_weight_gradient, backend="numpy"))(wh, xs, h)
    np.testing.assert_allclose(got, reference, rtol=1e-10, atol=1e-12)
    (gradient,) = [c for entries in grad._cache.values() for c in entries]
    assert gradient.executor.tier == "compiled"
    # added into the sum by loops up to the bound, by BLAS above it (chosen when the sizes are known)
    source = gradient.executor.compiled_source
    assert f"<= {ACCUMULATE_INLINE_MOST}:" in source and "+= np.dot(" in source
    assert (n * 32 * n > ACCUMULATE_INLINE_MOST) == (n == 96)
