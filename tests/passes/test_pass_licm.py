"""Loop-invariant code motion: golden IR, what must stay in the loop, nested loops, zero-trip loops."""

import numpy as np
from pass_harness import (
    F32,
    HAND_BUILT,
    I64,
    assert_ir,
    assert_same_results,
    assert_unchanged_by,
    const,
    emit,
    emit_cond,
    emit_print,
    emit_while,
    execute,
    new_builder,
    run_pass,
    tensor_type,
)

from dy2st.ir.types import TensorType
from dy2st.ops.indexing import TENSOR_SLOT
from dy2st.passes.licm import LoopInvariantCodeMotion


def rnn_graph():
    """h = tanh((W.T * 0.5) @ h) + W[k], printing W.sum() at each step, n times."""
    builder, (h0, W, n, k) = new_builder(
        "rnn", h0=tensor_type(F32, 4), W=tensor_type(F32, 4, 4), n=tensor_type(I64), k=tensor_type(I64)
    )
    with builder:

        def body(i, h):
            scaled = emit(builder, "multiply", emit(builder, "transpose", W, axes=(1, 0)), const(builder, 0.5))
            h_next = emit(builder, "tanh", emit(builder, "matmul", scaled, h))
            emit_print(builder, emit(builder, "sum", W, axis=None, keepdims=False))
            row = builder.emit("getitem", [W, k], {"template": (TENSOR_SLOT,)}, loc=HAND_BUILT).result
            return [emit(builder, "add", i, const(builder, 1)), emit(builder, "add", h_next, row)]

        loop = emit_while(
            builder, [const(builder, np.int64(0)), h0], ["i", "h"], lambda i, h: emit(builder, "less", i, n), body
        )
        return builder.finish([loop.results[1]])


def rnn_reference(h, W, n, k):
    for _ in range(n):
        h = np.tanh((W.T * np.float32(0.5)) @ h) + W[k]
    return h


def test_hoists_invariant_chains_but_not_effects_or_raising_indexing(capsys):
    graph = rnn_graph()
    assert run_pass(LoopInvariantCodeMotion, graph) is True
    # The print stays (an effect per iteration); W[k] stays (k may be out of range, and a loop
    # that never runs must not raise); transpose, multiply and sum move out.
    assert_ir(
        graph,
        """
        func @rnn(%h0: f32[4], %W: f32[4,4], %n: i64[], %k: i64[]) -> f32[4] {
          %0 = const dense<0> : i64[]
          %1 = transpose %W {axes=(1, 0)} : f32[4,4]
          %2 = multiply %1, 0.5 : f32[4,4]
          %3 = sum %W {axis=None, keepdims=False} : f32[]
          %4, %5 = while_loop (%0, %h0) : (i64[], f32[4])
              cond (%i: i64[], %h: f32[4]) {
            %6 = less %i, %n : bool[]
            yield %6
          } body (%i_1: i64[], %h_1: f32[4]) {
            %7 = matmul %2, %h_1 : f32[4]
            %8 = tanh %7 : f32[4]
            print %3 {template=(None,)}
            %9 = getitem %W, %k {template=(%,)} : f32[4]
            %10 = add %i_1, 1 : i64[]
            %11 = add %8, %9 : f32[4]
            yield %10, %11
          }
          return %5
        }
    """,
    )
    h0 = np.linspace(-1, 1, 4).astype(np.float32)
    W = np.arange(16, dtype=np.float32).reshape(4, 4) / 16
    assert_same_results(execute(graph, h0, W, np.array(3), np.array(2)), [rnn_reference(h0, W, 3, 2)])
    assert capsys.readouterr().out == f"{W.sum()}\n" * 3


def test_zero_trip_loop_with_out_of_range_index_still_runs():
    graph = rnn_graph()
    run_pass(LoopInvariantCodeMotion, graph)
    h0 = np.ones(4, np.float32)
    assert_same_results(execute(graph, h0, np.eye(4, dtype=np.float32), np.array(0), np.array(99)), [h0])


def test_loop_without_invariants_is_left_unchanged():
    graph = rnn_graph()
    run_pass(LoopInvariantCodeMotion, graph)
    assert_unchanged_by(LoopInvariantCodeMotion, graph)


def nested_graph():
    """for i < n: for j < n: acc += exp(x) * i  (exp(x) is invariant in both loops)."""
    builder, (x, n) = new_builder("nested", x=tensor_type(F32, 3), n=tensor_type(I64))
    with builder:

        def outer_body(i, acc):
            scale = emit(builder, "astype", i, dtype=np.dtype(np.float32))

            def inner_body(j, inner_acc):
                term = emit(builder, "multiply", emit(builder, "exp", x), scale)
                return [emit(builder, "add", j, const(builder, 1)), emit(builder, "add", inner_acc, term)]

            inner = emit_while(
                builder,
                [const(builder, np.int64(0)), acc],
                ["j", "inner_acc"],
                lambda j, a: emit(builder, "less", j, n),
                inner_body,
            )
            return [emit(builder, "add", i, const(builder, 1)), inner.results[1]]

        zeros = const(builder, np.zeros(3, np.float32))
        outer = emit_while(
            builder,
            [const(builder, np.int64(0)), zeros],
            ["i", "acc"],
            lambda i, a: emit(builder, "less", i, n),
            outer_body,
        )
        return builder.finish([outer.results[1]])


def test_ops_climb_out_of_nested_loops_as_far_as_their_operands_allow():
    graph = nested_graph()
    x, n = np.array([0.0, 0.5, 1.0], np.float32), np.array(3)
    expected = execute(graph, x, n)
    assert run_pass(LoopInvariantCodeMotion, graph) is True
    assert_ir(
        graph,
        """
        func @nested(%x: f32[3], %n: i64[]) -> f32[3] {
          %0 = const dense<[0., 0., 0.]> : f32[3]
          %1 = const dense<0> : i64[]
          %2 = const dense<0> : i64[]
          %3 = exp %x : f32[3]
          %4, %5 = while_loop (%1, %0) : (i64[], f32[3])
              cond (%i: i64[], %acc: f32[3]) {
            %6 = less %i, %n : bool[]
            yield %6
          } body (%i_1: i64[], %acc_1: f32[3]) {
            %7 = astype %i_1 {dtype=float32} : f32[]
            %8 = multiply %3, %7 : f32[3]
            %9, %10 = while_loop (%2, %acc_1) : (i64[], f32[3])
                cond (%j: i64[], %inner_acc: f32[3]) {
              %11 = less %j, %n : bool[]
              yield %11
            } body (%j_1: i64[], %inner_acc_1: f32[3]) {
              %12 = add %j_1, 1 : i64[]
              %13 = add %inner_acc_1, %8 : f32[3]
              yield %12, %13
            }
            %14 = add %i_1, 1 : i64[]
            yield %14, %10
          }
          return %5
        }
    """,
    )
    assert_same_results(execute(graph, x, n), expected)
    assert_same_results(expected, [np.exp(x) * np.float32(3 * (0 + 1 + 2))])


def test_cond_branches_are_not_hoisted_from():
    builder, (x, p) = new_builder("branch", x=tensor_type(F32, 3), p=TensorType((), np.dtype(bool)))
    with builder:
        branch = emit_cond(builder, p, lambda: [emit(builder, "exp", x)], lambda: [x])
        graph = builder.finish([branch.result])
    assert_unchanged_by(LoopInvariantCodeMotion, graph)


def halve_until_close(a):
    x = a * 1.0
    while np.abs(x - a / 3.0) > 1e-9 * a:
        x = (x + a / 3.0) * 0.5
    return x


def test_invariants_of_the_loop_condition_are_hoisted_too():
    import dy2st

    a = np.array(6.0)
    static = dy2st.to_static(halve_until_close)
    graph = static.graph(a)
    loop = next(op for op in graph.body.ops if op.name == "while_loop")
    condition_ops = [inner.name for op in loop.regions[0].block.ops for inner in op.walk()]
    # `1e-9 * a` and `a / 3.0` (in the condition) no longer run at every test
    assert "divide" not in condition_ops and condition_ops.count("multiply") == 0
    assert static(a) == halve_until_close(a)
