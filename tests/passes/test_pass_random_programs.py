"""Property test: the cleanup passes never change what a random program computes.

Programs are random straight-line sequences of elementwise ops over two inputs, literal constants
(including the identities simplify removes) and repeated expressions, some of them inside the
branches of a ``cond``. Powers are left out: their rewrite is licensed to differ by 2 ulp (tested
in test_pass_simplify.py); everything else must give bit-identical results.
"""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pass_harness import BOOL, F32, const, emit, emit_cond, execute, new_builder, tensor_type

from dy2st.passes.pipeline import default_passes, optimize

CLEANUPS = 5  # simplify, fold, cse, licm, dce: the first passes of the default pipeline
UNARY = ["negative", "tanh", "absolute", "exp"]
BINARY = ["add", "subtract", "multiply", "maximum"]
LITERALS = [0, 1, 0.0, 1.0, -0.0, 2.5, np.float32(1.0), np.float32(3.0), np.array([1.0, 2.0, 0.5, -1.0], np.float32)]

step = st.tuples(
    st.sampled_from(UNARY + BINARY + ["literal"]),
    st.integers(0, 1000),  # first operand, modulo the pool size
    st.integers(0, 1000),  # second operand, modulo the pool size
    st.integers(0, len(LITERALS) - 1),
    st.booleans(),  # put the literal on the left of a binary op
)


def emit_steps(builder, pool, steps):
    """Append one op per step to ``pool``, reading operands from the pool built so far."""
    for name, a, b, literal, left in steps:
        first = pool[a % len(pool)]
        if name == "literal":
            name, second = BINARY[a % len(BINARY)], const(builder, LITERALS[literal])
            first, second = (second, first) if left else (first, second)
            pool.append(emit(builder, name, first, second))
        elif name in UNARY:
            pool.append(emit(builder, name, first))
        else:
            pool.append(emit(builder, name, first, pool[b % len(pool)]))
    return pool[-1]


def build(before, then_steps, else_steps, after):
    builder, (x, y, p) = new_builder("random", x=tensor_type(F32, 4), y=tensor_type(F32, 4), p=tensor_type(BOOL))
    with builder:
        pool = [x, y]
        emit_steps(builder, pool, before)
        branch = emit_cond(
            builder,
            p,
            lambda: [emit_steps(builder, list(pool), then_steps)],
            lambda: [emit_steps(builder, list(pool), else_steps)],
        )
        pool.append(branch.result)
        return builder.finish([emit_steps(builder, pool, after), pool[2 % len(pool)]])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(step, max_size=8),
    st.lists(step, max_size=4),
    st.lists(step, max_size=4),
    st.lists(step, min_size=1, max_size=6),
    st.booleans(),
)
def test_cleanups_keep_results_bit_identical(before, then_steps, else_steps, after, flag):
    x = np.array([0.5, -1.25, 0.0, 2.0], np.float32)
    y = np.array([-0.0, 1.5, -2.0, 0.25], np.float32)
    with np.errstate(all="ignore"):
        expected = execute(build(before, then_steps, else_steps, after), x, y, np.array(flag))
        graph = optimize(build(before, then_steps, else_steps, after), passes=default_passes()[:CLEANUPS])
        actual = execute(graph, x, y, np.array(flag))
    for a, e in zip(actual, expected):
        assert a.dtype == e.dtype and a.shape == e.shape
        # x + 0 may turn -0.0 into +0.0 (documented in simplify); compare values, NaNs included.
        assert np.array_equal(a, e, equal_nan=True)
