"""Random programs mixing in-place-capable ufuncs, matmuls, reductions, views, loops and branches: the
planned graph gives bit-identical results to the unplanned one, call after call, never writes its
inputs, and never touches an array it already handed back."""

import random

import numpy as np
import pytest
from pass_harness import F64, const, emit, emit_cond, emit_while, new_builder, run_pass, tensor_type

from dy2st.backend.numpy.executor import Executor
from dy2st.passes.memory_plan import MemoryPlan

N = 8


def random_program(seed: int):
    """A graph over two f64[8,8] inputs; the same seed builds the same graph."""
    rng = random.Random(seed)
    builder, inputs = new_builder("random", x=tensor_type(F64, N, N), y=tensor_type(F64, N, N))
    with builder:
        values = list(inputs)
        for _ in range(rng.randint(4, 14)):
            square = [v for v in values if v.type.shape == (N, N)]
            a, b = rng.choice(square), rng.choice(square)
            kind = rng.choice(
                [
                    "unary",
                    "binary",
                    "binary",
                    "scale",
                    "matmul",
                    "transpose",
                    "reverse",
                    "row_sum",
                    "diagonal",
                    "flat",
                    "loop",
                    "branch",
                ]
            )
            if kind == "unary":
                value = emit(builder, rng.choice(["tanh", "negative", "sin", "absolute"]), a)
            elif kind == "binary":
                value = emit(builder, rng.choice(["add", "multiply", "subtract", "maximum"]), a, b)
            elif kind == "scale":
                value = emit(builder, "multiply", a, const(builder, 0.5))
            elif kind == "matmul":
                value = emit(builder, "multiply", emit(builder, "matmul", a, b), const(builder, 0.125))
            elif kind == "transpose":  # a view
                value = emit(builder, "transpose", a, axes=(1, 0))
            elif kind == "reverse":  # a view through basic indexing
                value = emit(builder, "getitem", a, template=(slice(None, None, -1),))
            elif kind == "row_sum":
                value = emit(builder, "subtract", a, emit(builder, "sum", a, axis=(1,), keepdims=True))
            elif kind == "diagonal":  # np.diag of a matrix may be a view, not flagged as one
                value = emit(builder, "add", b, emit(builder, "diag", a, k=0))
            elif kind == "flat":  # a flat f64[64] shares buffers with f64[8,8] values (same bytes)
                flat = emit(builder, "tanh", emit(builder, "reshape", a, shape=(N * N,)))
                value = emit(builder, "reshape", flat, shape=(N, N))
            elif kind == "loop":
                value = _loop(builder, a, b)
            else:
                value = _branch(builder, inputs[0], a, b)
            values.append(value)
        outputs = rng.sample(values[2:], k=min(len(values) - 2, rng.randint(1, 3)))
        return builder.finish(outputs)


def _loop(builder, outer, init):
    """Three iterations of h = (t @ t) / 8 - h with t = tanh(h + outer): the matmul takes a fresh
    buffer after the body's last read of ``outer``, which the next iteration reads again."""

    def body(i, h):
        t = emit(builder, "tanh", emit(builder, "add", h, outer))
        m = emit(builder, "multiply", emit(builder, "matmul", t, t), const(builder, 0.125))
        return [emit(builder, "add", i, const(builder, 1)), emit(builder, "subtract", m, h)]

    loop = emit_while(
        builder,
        [const(builder, np.int64(0)), init],
        ["i", "h"],
        lambda i, h: emit(builder, "less", i, const(builder, 3)),
        body,
    )
    return loop.results[1]


def _branch(builder, x, a, b):
    """A cond on the sign of sum(x) with a planned temporary in one branch."""
    positive = emit(builder, "greater", emit(builder, "sum", x), const(builder, 0.0))
    branch = emit_cond(
        builder,
        positive,
        lambda: [emit(builder, "add", emit(builder, "multiply", emit(builder, "sin", a), b), a)],
        lambda: [emit(builder, "subtract", b, a)],
    )
    return branch.result


@pytest.mark.parametrize("seed", range(60))
def test_planned_random_program_matches_unplanned(seed):
    planned_graph = random_program(seed)
    run_pass(MemoryPlan, planned_graph)
    planned, unplanned = Executor(planned_graph), Executor(random_program(seed))
    rng = np.random.default_rng(seed)
    handed_back = []
    for _ in range(3):
        x, y = rng.standard_normal((N, N)), rng.standard_normal((N, N))
        x_before, y_before = x.copy(), y.copy()
        got = planned(x, y)
        want = unplanned(x, y)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(x, x_before)
        np.testing.assert_array_equal(y, y_before)
        handed_back.append([(g, np.array(g, copy=True)) for g in got])
    for results in handed_back:  # later calls left earlier results alone
        for array, snapshot in results:
            np.testing.assert_array_equal(array, snapshot)
