"""Fused groups that update an argument in place write their result into the argument's buffer.

``A += np.outer(u1, v1) + np.outer(u2, v2)`` fuses into one group whose result is the new value of
``A``. Where ``A``'s old value is dead after the group, the ``in-place-updates`` pass marks the
group ``in_place_update=(operand or None, ...)`` (one entry per result) and both tiers write that
result into ``A`` itself: the tiled kernel, the compiled loop and a small group run op by op.
Every case compares both tiers with eager NumPy bit for bit (results, dtypes, the final state of
every argument, the caller's array returned as itself), and checks the mark and that nothing is
copied back into the argument after the call.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import dy2st
from dy2st.backend.numba.executor import TieredExecutor
from dy2st.ir.core import IN_PLACE_UPDATE
from dy2st.ops.fused import FUSED

RNG = np.random.default_rng(2026)

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def numba_or_skip(backend: str) -> None:
    if backend == "compiled":
        pytest.importorskip("numba")


# --- the functions, written as NumPy users write them ----------------------------------------------
def rank_two_update(A, u1, v1, u2, v2):
    A += np.outer(u1, v1) + np.outer(u2, v2)
    return A


def gemver(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    A += np.outer(u1, v1) + np.outer(u2, v2)
    x += beta * y @ A + z
    w += alpha * A @ x
    return A, x, w


def multiply_add(x, a, b):
    x += a * b


def axpy(x, alpha, y):
    x -= alpha * y
    return x


def pulled_towards_a_row(X, row):
    X -= 0.5 * (X - row)
    return X


def doubled_plus_itself(x):
    x += x * 2
    return x


def sum_of_two(x, y):
    x += y * 0.5 + 1.0
    return x


def relaxed_steps(x, a, b, steps):
    for _ in range(steps):
        x += a * b - 0.25 * x
    return x


def relaxed_until_small(x, a):
    while np.abs(x).max() > 1.0:
        x *= a * 0.5 + 0.1
    return x


def scaled_step_by_step(x, a, steps):
    k = 0
    while k < steps:
        x *= a * 0.5 + 0.1 * k  # depends on k: stays in the loop
        k += 1
    return x


def keeps_the_old_value(x, a, b):
    old = x * 1.0  # a new array eagerly; simplified to x itself in the graph
    x += a * b
    return x, old.sum()


def reads_the_old_value_inside_the_group(x, a, b):
    old = x * 1.0
    x += a * b
    return old + x


# --- helpers ---------------------------------------------------------------------------------------
def vector(n, dtype=np.float64):
    return RNG.standard_normal(n).astype(dtype)


def same_bits(actual, expected, where: str) -> None:
    """Same type, shape, dtype and bits (NaNs included): + - * / give NumPy's bits exactly."""
    assert type(actual) is type(expected), f"{where}: {type(actual).__name__} != {type(expected).__name__}"
    if isinstance(expected, tuple):
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            same_bits(a, e, f"{where}[{i}]")
        return
    if expected is None:
        return
    a, e = np.asarray(actual), np.asarray(expected)
    assert (a.shape, a.dtype) == (e.shape, e.dtype), f"{where}: {a.dtype}{a.shape} != {e.dtype}{e.shape}"
    assert a.tobytes() == e.tobytes(), f"{where}: {a} != {e}"


def run_like_eager(fn, args, backend: str, calls: int = 2):
    """Call ``fn`` eagerly and converted on copies of ``args`` (``calls`` times, so the second call
    runs the built graph); results, the caller's arrays returned as themselves, and the final
    arguments must match bit for bit. Returns the converted function."""
    static = dy2st.to_static(fn, backend=backend)
    for _ in range(calls):
        eager_args, converted_args = copy.deepcopy(args), copy.deepcopy(args)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            expected = fn(*eager_args)
            actual = static(*converted_args)
        same_bits(actual, expected, "result")
        for i, (a, e) in enumerate(zip(converted_args, eager_args)):
            same_bits(a, e, f"argument {i} after the call")
        returned = actual if isinstance(actual, tuple) else (actual,)
        for a, e in zip(returned, expected if isinstance(expected, tuple) else (expected,)):
            for k, arg in enumerate(eager_args):
                if e is arg:
                    assert a is converted_args[k], "eager code returns the caller's array itself"
    return static


def in_place_marks(static, *args) -> list[tuple | None]:
    """For every fused group of the graph for ``args``: None where it has no ``in_place_update``
    mark, else for each result the graph argument it is written into (``"arg 0"``), the loop
    value (``"carried"``) or None."""
    graph = static.graph(*args)
    marks: list[tuple | None] = []
    for op in graph.walk():
        if op.name != FUSED:
            continue
        mark = op.attrs.get(IN_PLACE_UPDATE)
        if mark is None:
            marks.append(None)
            continue
        into = [None if k is None else op.operands[k] for k in mark]
        marks.append(tuple(None if v is None else _described(v, graph) for v in into))
    return marks


def _described(value, graph) -> str:
    args = graph.body.args
    return f"arg {args.index(value)}" if any(value is a for a in args) else "carried"


def executor_of(static, *args):
    static(*copy.deepcopy(args))
    (compiled,) = [c for entries in [*static._cache.values(), *static._dynamic_cache.values()] for c in entries]
    return compiled.executor


def copies_into_arguments(static, args, monkeypatch) -> int:
    """How many ``np.copyto`` calls a call makes into one of its array arguments."""
    args = copy.deepcopy(args)
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    copied = []
    original = np.copyto

    def counting(dst, src, *rest, **kwargs):
        if any(dst is a for a in arrays):
            copied.append(dst)
        return original(dst, src, *rest, **kwargs)

    monkeypatch.setattr(np, "copyto", counting)
    static(*args)
    monkeypatch.setattr(np, "copyto", original)
    return len(copied)


def compiled_kernels(static, *args):
    executor = executor_of(static, *args)
    assert isinstance(executor, TieredExecutor) and executor.tier == "compiled", getattr(executor, "failures", None)
    return executor.kernels


# --- the update of gemver: a rank-2 update of A -------------------------------------------------
@pytest.mark.parametrize("backend", ["numpy", "compiled"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [20, 400])  # a small group run op by op; a tiled kernel of several tiles
def test_a_rank_two_update_writes_into_A(backend, dtype, n, monkeypatch):
    numba_or_skip(backend)
    args = (RNG.standard_normal((n, n)).astype(dtype), *(vector(n, dtype) for _ in range(4)))
    static = run_like_eager(rank_two_update, args, backend)
    assert in_place_marks(static, *args) == [("arg 0",)]
    assert copies_into_arguments(static, args, monkeypatch) == 0


@pytest.mark.parametrize("backend", ["numpy", "compiled"])
def test_gemver_writes_A_and_x_in_place_and_copies_nothing_back(backend, monkeypatch):
    numba_or_skip(backend)
    n = 300
    args = (1.5, 1.2, RNG.standard_normal((n, n)), *(vector(n) for _ in range(8)))
    static = run_like_eager(gemver, args, backend)
    # A's group also yields alpha * A for the product after it: that result is a new array.
    assert in_place_marks(static, *args) == [("arg 0", None), ("arg 6",)]
    source = executor_of(static, *args).source
    # alpha and beta are constants of the graph: a0 is A, a6 is x.
    assert "out=(a0, None, ))" in source and "out=a6)" in source, source
    assert copies_into_arguments(static, args, monkeypatch) == 0


# --- elementwise updates of vectors ----------------------------------------------------------------
@pytest.mark.parametrize("backend", ["numpy", "compiled"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [0, 1, 100, 100_000])  # empty, one element, run op by op, one loop/tiles
def test_multiply_add_into_x(backend, dtype, n, monkeypatch):
    numba_or_skip(backend)
    args = (vector(n, dtype), vector(n, dtype), vector(n, dtype))
    if n > 2:
        args[1][:3] = [np.nan, np.inf, -0.0]
    static = run_like_eager(multiply_add, args, backend)
    assert in_place_marks(static, *args) == [("arg 0",)]
    assert copies_into_arguments(static, args, monkeypatch) == 0


def test_the_compiled_loop_of_a_group_writes_into_x():
    pytest.importorskip("numba")
    args = (vector(100_000), vector(100_000), vector(100_000))
    static = run_like_eager(multiply_add, args, "compiled")
    (kernel,) = compiled_kernels(static, *args).values()
    source = executor_of(static, *args).source
    assert "k_fused_compiled_" in source and "out=a0)" in source, source

    def refuse(*inputs, out=None, out_may_overlap=False):
        raise AssertionError("the compiled loop gave the call to the NumPy tier")

    kernel.fallback = refuse
    x, a, b = copy.deepcopy(args)
    expected = x + a * b
    static(x, a, b)
    same_bits(x, expected, "x after the compiled loop")


@pytest.mark.parametrize("backend", ["numpy", "compiled"])
@pytest.mark.parametrize("alpha", [0.75, np.float32(0.75)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_axpy_with_a_python_or_numpy_scalar(backend, alpha, dtype, monkeypatch):
    numba_or_skip(backend)
    args = (vector(70_000, dtype), alpha, vector(70_000, dtype))
    static = run_like_eager(axpy, args, backend)
    assert in_place_marks(static, *args) == [("arg 0",)]
    assert copies_into_arguments(static, args, monkeypatch) == 0


@pytest.mark.parametrize("backend", ["numpy", "compiled"])
def test_float32_updated_by_float64_keeps_its_dtype(backend):
    numba_or_skip(backend)
    args = (vector(70_000, np.float32), vector(70_000, np.float64))
    static = run_like_eager(sum_of_two, args, backend)
    assert in_place_marks(static, *args) == [None]  # the result is float64, the argument float32


@pytest.mark.parametrize("backend", ["numpy", "compiled"])
@pytest.mark.parametrize("shape", [(3, 5), (300, 400)])
def test_a_two_d_update_with_a_broadcast_row(backend, shape, monkeypatch):
    numba_or_skip(backend)
    args = (RNG.standard_normal(shape), vector(shape[1]))
    static = run_like_eager(pulled_towards_a_row, args, backend)
    assert in_place_marks(static, *args) == [("arg 0",)]
    assert copies_into_arguments(static, args, monkeypatch) == 0


@pytest.mark.parametrize("backend", ["numpy", "compiled"])
@pytest.mark.parametrize("n", [7, 100_000])
def test_the_operand_read_again_inside_the_group(backend, n, monkeypatch):
    numba_or_skip(backend)
    args = (vector(n),)
    static = run_like_eager(doubled_plus_itself, args, backend)
    assert in_place_marks(static, *args) == [("arg 0",)]
    assert copies_into_arguments(static, args, monkeypatch) == 0


# --- arguments that are views, or overlap ------------------------------------------------------------
@pytest.mark.parametrize("backend", ["numpy", "compiled"])
def test_strided_and_fortran_ordered_arguments(backend):
    numba_or_skip(backend)
    base = RNG.standard_normal(200_000)
    run_like_eager(multiply_add, (base[::2], vector(100_000), vector(100_000)), backend)
    fortran = np.asfortranarray(RNG.standard_normal((300, 400)))
    run_like_eager(pulled_towards_a_row, (fortran, vector(400)), backend)
    run_like_eager(rank_two_update, (fortran[:, :300], *(vector(300) for _ in range(4))), backend)


@pytest.mark.parametrize("backend", ["numpy", "compiled"])
@pytest.mark.parametrize("n", [50, 100_000])
def test_an_argument_passed_twice_or_overlapping_another(backend, n):
    numba_or_skip(backend)
    static = dy2st.to_static(multiply_add, backend=backend)
    for make in (
        lambda x: (x, x, x),  # all three the same array
        lambda x: (x[1:], x[:-1], x[1:]),  # x and b the same, a shifted by one
        lambda x: (x[:-1], x[1:], x[:-1].copy()),
    ):
        eager_base, converted_base = vector(n + 1), None
        converted_base = eager_base.copy()
        multiply_add(*make(eager_base))
        static(*make(converted_base))
        same_bits(converted_base, eager_base, "the shared array after the call")


# --- in loops ------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["numpy", "compiled"])
@pytest.mark.parametrize("n", [10, 100_000])
def test_a_fused_update_carried_by_a_loop(backend, n):
    numba_or_skip(backend)
    args = (vector(n), vector(n), vector(n), 4)
    run_like_eager(relaxed_steps, args, backend)
    x = 3.0 * vector(n, np.float32)
    run_like_eager(relaxed_until_small, (x, np.float32(0.9)), backend)


@pytest.mark.parametrize("backend", ["numpy", "compiled"])
@pytest.mark.parametrize("n", [10, 70_000])
def test_a_fused_update_of_a_carried_array_in_a_while_loop(backend, n):
    numba_or_skip(backend)
    run_like_eager(scaled_step_by_step, (vector(n), vector(n), 5), backend)  # unrolled
    run_like_eager(scaled_step_by_step, (vector(n), vector(n), np.array(5)), backend)
    run_like_eager(scaled_step_by_step, (vector(n, np.float32), vector(n, np.float32), 0), backend)


def test_the_loop_carried_update_is_marked_on_the_numpy_tier():
    n = 70_000
    args = (vector(n), vector(n), np.array(3))  # a count known when the graph runs: a while loop
    static = run_like_eager(scaled_step_by_step, args, "numpy")
    assert ("carried",) in in_place_marks(static, *args)
    assert "out=w" in executor_of(static, *args).source


# --- where the old value is still read: a new array -----------------------------------------------
@pytest.mark.parametrize("backend", ["numpy", "compiled"])
@pytest.mark.parametrize("n", [10, 100_000])
def test_an_old_value_read_after_the_group_keeps_a_new_array(backend, n):
    numba_or_skip(backend)
    args = (vector(n), vector(n), vector(n))
    static = run_like_eager(keeps_the_old_value, args, backend)
    assert in_place_marks(static, *args) == [None]


@pytest.mark.parametrize("backend", ["numpy", "compiled"])
def test_an_old_value_read_later_in_the_group_keeps_a_new_array(backend):
    numba_or_skip(backend)
    args = (vector(100_000), vector(100_000), vector(100_000))
    static = run_like_eager(reads_the_old_value_inside_the_group, args, backend)
    assert in_place_marks(static, *args) == [None]


# --- errors ---------------------------------------------------------------------------------------
def test_a_floating_point_error_midway_leaves_the_argument_as_eager_code_does():
    """Under ``np.errstate(over="raise")`` around the call, eager ``x += a * b`` raises in the
    product, before touching ``x``; the tiles must not leave ``x`` half written."""
    n = 200_000
    x, a, b = np.ones(n), np.ones(n), np.ones(n)
    a[-1] = 1e300
    b[-1] = 1e300
    static = dy2st.to_static(multiply_add, backend="numpy")
    static(x.copy(), np.ones(n), np.ones(n))
    with np.errstate(over="raise"):
        eager_x, converted_x = x.copy(), x.copy()
        with pytest.raises(FloatingPointError):
            multiply_add(eager_x, a, b)
        with pytest.raises(FloatingPointError):
            static(converted_x, a, b)
    same_bits(converted_x, eager_x, "x after the error")
