"""Elementwise fusion: golden IR for chains, DAGs, broadcasts, multiple outputs, regions; legality."""

import numpy as np
from pass_harness import (
    BOOL,
    F32,
    assert_ir,
    assert_unchanged_by,
    const,
    emit,
    emit_cond,
    emit_print,
    emit_while,
    execute,
    new_builder,
    run_pass,
    staged_graph,
    tensor_type,
)

from dy2st.passes.fuse import FuseElementwise


def chain(x):
    return np.tanh(x * 2.0) + 1


def test_chain_becomes_one_fused_op_with_its_region():
    graph = staged_graph(chain, np.ones(4, np.float32))
    assert run_pass(FuseElementwise, graph) is True
    assert_ir(
        graph,
        """
        func @chain(%x: f32[4]) -> f32[4] {
          %0 = fused %x {name='fused_0'} : f32[4]
          {
            ^args(%x_1: f32[4])
            %1 = multiply %x_1, 2.0 : f32[4]
            %2 = tanh %1 : f32[4]
            %3 = add %2, 1 : f32[4]
            yield %3
          }
          return %0
        }
    """,
    )


def test_absorbed_ops_keep_their_source_locations():
    graph = staged_graph(chain, np.ones(4, np.float32))
    before = [(op.name, op.loc) for op in graph.walk() if op.name not in ("return", "const")]
    run_pass(FuseElementwise, graph)
    fused = graph.body.ops[0]
    inner = [(op.name, op.loc) for op in fused.regions[0].block.ops if op.name not in ("yield", "const")]
    assert inner == before
    assert fused.loc == before[-1][1]
    assert before[0][1].lineno == chain.__code__.co_firstlineno + 1


def diamond(x):
    a = x * 2.0
    return np.tanh(a) + np.exp(a)


def test_dag_with_a_shared_intermediate_fuses_into_one_group():
    graph = staged_graph(diamond, np.ones(4, np.float32))
    run_pass(FuseElementwise, graph)
    assert_ir(
        graph,
        """
        func @diamond(%x: f32[4]) -> f32[4] {
          %0 = fused %x {name='fused_0'} : f32[4]
          {
            ^args(%x_1: f32[4])
            %a = multiply %x_1, 2.0 : f32[4]
            %1 = tanh %a : f32[4]
            %2 = exp %a : f32[4]
            %3 = add %1, %2 : f32[4]
            yield %3
          }
          return %0
        }
    """,
    )


def broadcast(x, b):
    return (x + b) * (b * 2.0)


def test_broadcast_operands_are_inputs_and_smaller_ops_stay_outside():
    graph = staged_graph(broadcast, np.ones((2, 3), np.float32), np.ones(3, np.float32))
    run_pass(FuseElementwise, graph)
    assert_ir(
        graph,
        """
        func @broadcast(%x: f32[2,3], %b: f32[3]) -> f32[2,3] {
          %0 = multiply %b, 2.0 : f32[3]
          %1 = fused %x, %b, %0 {name='fused_0'} : f32[2,3]
          {
            ^args(%x_1: f32[2,3], %b_1: f32[3], %2: f32[3])
            %3 = add %x_1, %b_1 : f32[2,3]
            %4 = multiply %3, %2 : f32[2,3]
            yield %4
          }
          return %1
        }
    """,
    )


def two_outputs(x):
    y = x * 2.0 + 1
    return y, y * 3


def test_values_used_outside_the_group_become_results():
    graph = staged_graph(two_outputs, np.ones(4))
    run_pass(FuseElementwise, graph)
    assert_ir(
        graph,
        """
        func @two_outputs(%x: f64[4]) -> (f64[4], f64[4]) {
          %y, %0 = fused %x {name='fused_0'} : (f64[4], f64[4])
          {
            ^args(%x_1: f64[4])
            %1 = multiply %x_1, 2.0 : f64[4]
            %y_1 = add %1, 1 : f64[4]
            %2 = multiply %y_1, 3 : f64[4]
            yield %y_1, %2
          }
          return %y, %0
        }
    """,
    )


def reenters(x):
    a = x * 2.0
    return a + np.sum(a)


def test_no_group_through_an_outside_op_that_would_form_a_cycle():
    graph = staged_graph(reenters, np.ones(4))
    assert_unchanged_by(FuseElementwise, graph)


def consumer_in_between(x):
    a = x * 2.0
    s = np.sum(a)
    return np.tanh(a), s


def test_outside_consumer_placed_inside_the_group_moves_after_the_fused_op():
    graph = staged_graph(consumer_in_between, np.ones(4))
    run_pass(FuseElementwise, graph)
    assert_ir(
        graph,
        """
        func @consumer_in_between(%x: f64[4]) -> (f64[4], f64[]) {
          %a, %0 = fused %x {name='fused_0'} : (f64[4], f64[4])
          {
            ^args(%x_1: f64[4])
            %a_1 = multiply %x_1, 2.0 : f64[4]
            %1 = tanh %a_1 : f64[4]
            yield %a_1, %1
          }
          %s = sum %a {axis=None, keepdims=False} : f64[]
          return %0, %s {result_kinds=(None, 'scalar')}
        }
    """,
    )
    x = np.arange(4.0)
    tanh, total = execute(graph, x)
    assert np.array_equal(tanh, np.tanh(x * 2.0)) and total == np.sum(x * 2.0)


def test_a_print_between_group_members_is_never_reordered():
    builder, (x,) = new_builder("printed", x=tensor_type(F32, 4))
    with builder:
        a = emit(builder, "multiply", x, const(builder, 2.0))
        emit_print(builder, a)
        b = emit(builder, "tanh", a)
        graph = builder.finish([b])
    assert_unchanged_by(FuseElementwise, graph)


def test_groups_form_inside_cond_and_while_regions():
    builder, (x, flag) = new_builder("regions", x=tensor_type(F32, 4), flag=tensor_type(BOOL))
    with builder:
        two = const(builder, 2.0)
        picked = emit_cond(
            builder,
            flag,
            lambda: [emit(builder, "add", emit(builder, "multiply", x, two), two)],
            lambda: [x],
        ).result
        looped = emit_while(
            builder,
            [picked],
            ["v"],
            lambda v: emit(builder, "less", emit(builder, "sum", v, axis=None, keepdims=False), const(builder, 100.0)),
            lambda v: [emit(builder, "add", emit(builder, "exp", v), const(builder, 1.0))],
        ).results[0]
        graph = builder.finish([looped])
    assert run_pass(FuseElementwise, graph) is True
    assert_ir(
        graph,
        """
        func @regions(%x: f32[4], %flag: bool[]) -> f32[4] {
          %0 = cond %flag -> f32[4] {
            %1 = fused %x {name='fused_0'} : f32[4]
            {
              ^args(%x_1: f32[4])
              %2 = multiply %x_1, 2.0 : f32[4]
              %3 = add %2, 2.0 : f32[4]
              yield %3
            }
            yield %1
          } else {
            yield %x
          }
          %4 = while_loop (%0) : f32[4]
              cond (%v: f32[4]) {
            %5 = sum %v {axis=None, keepdims=False} : f32[]
            %6 = less %5, 100.0 : bool[]
            yield %6
          } body (%v_1: f32[4]) {
            %7 = fused %v_1 {name='fused_1'} : f32[4]
            {
              ^args(%v_2: f32[4])
              %8 = exp %v_2 : f32[4]
              %9 = add %8, 1.0 : f32[4]
              yield %9
            }
            yield %7
          }
          return %4
        }
    """,
    )
    x = np.array([0.5, -1.0, 0.25, 2.0], np.float32)
    expected = x * np.float32(2.0) + np.float32(2.0)
    while np.sum(expected) < 100.0:
        expected = np.exp(expected) + 1.0
    (result,) = execute(graph, x, np.array(True))
    assert result.dtype == np.float32 and np.array_equal(result, expected)


def lone_op(x):
    return np.sum(x * 2.0)


def test_single_elementwise_ops_are_left_alone():
    graph = staged_graph(lone_op, np.ones(4))
    assert_unchanged_by(FuseElementwise, graph)


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def test_softmax_fuses_with_its_last_axis_reductions():
    graph = staged_graph(softmax, np.ones((3, 5), np.float32))
    run_pass(FuseElementwise, graph)
    assert_ir(
        graph,
        """
        func @softmax(%x: f32[3,5]) -> f32[3,5] {
          %0 = fused %x {name='fused_0'} : f32[3,5]
          {
            ^args(%x_1: f32[3,5])
            %1 = max %x_1 {axis=(1,), keepdims=True} : f32[3,1]
            %2 = subtract %x_1, %1 : f32[3,5]
            %e = exp %2 : f32[3,5]
            %3 = sum %e {axis=(1,), keepdims=True} : f32[3,1]
            %4 = divide %e, %3 : f32[3,5]
            yield %4
          }
          return %0
        }
    """,
    )


def test_without_reductions_only_the_elementwise_runs_fuse():
    graph = staged_graph(softmax, np.ones((3, 5), np.float32))
    assert FuseElementwise(reductions=False).run(graph) is True
    names = [op.name for op in graph.body.ops]
    assert names == ["max", "fused", "sum", "divide", "return"]


def row_sums(x, y):
    total = np.sum(x * y, axis=-1)
    return total * 2.0, np.sum(x, axis=0) + 1.0


def test_a_reduction_without_keepdims_ends_the_group_and_other_axes_stay_out():
    graph = staged_graph(row_sums, np.ones((3, 5)), np.ones((3, 5)))
    run_pass(FuseElementwise, graph)
    assert_ir(
        graph,
        """
        func @row_sums(%x: f64[3,5], %y: f64[3,5]) -> (f64[3], f64[5]) {
          %total = fused %x, %y {name='fused_0'} : f64[3]
          {
            ^args(%x_1: f64[3,5], %y_1: f64[3,5])
            %0 = multiply %x_1, %y_1 : f64[3,5]
            %total_1 = sum %0 {axis=(1,), keepdims=False} : f64[3]
            yield %total_1
          }
          %1 = multiply %total, 2.0 : f64[3]
          %2 = sum %x {axis=(0,), keepdims=False} : f64[5]
          %3 = add %2, 1.0 : f64[5]
          return %1, %3
        }
    """,
    )


W_STEP = np.linspace(-1.0, 1.0, 16).reshape(4, 4)


def unrolled(h, x):
    for _ in range(4):  # short enough to stay unrolled (rolling.UNROLL_AT_MOST)
        h = np.tanh(W_STEP @ h + x) * 0.5 + h * 0.5
    return h


def test_unrolled_steps_fuse_one_group_per_step_and_match_eager():
    h = np.array([0.1, -0.2, 0.3, 0.4])
    x = np.array([1.0, 0.5, -0.5, 2.0])
    graph = staged_graph(unrolled, h, x)
    run_pass(FuseElementwise, graph)
    names = [op.name for op in graph.body.ops]
    # A step's group cannot absorb the previous one: the matmul between them would form a cycle.
    assert names == ["matmul", "fused"] * 4 + ["return"]
    (result,) = execute(graph, h, x, W_STEP)
    assert result.tobytes() == unrolled(h, x).tobytes()


def relu_backward(z, g):
    return np.where(z > 0, g, np.where(z == 0, g * 0.5, 0.0))


def test_where_joins_the_group_of_the_comparisons_and_arithmetic_around_it():
    """The ReLU adjoint (what ``maximum``'s rule emits): masks, the halved tie and both selects
    are one kernel, so no full-size temporary is left between them."""
    graph = staged_graph(relu_backward, np.ones(4, np.float32), np.ones(4, np.float32))
    assert run_pass(FuseElementwise, graph) is True
    assert_ir(
        graph,
        """
        func @relu_backward(%z: f32[4], %g: f32[4]) -> f32[4] {
          %0 = fused %z, %g {name='fused_0'} : f32[4]
          {
            ^args(%z_1: f32[4], %g_1: f32[4])
            %1 = greater %z_1, 0 : bool[4]
            %2 = equal %z_1, 0 : bool[4]
            %3 = multiply %g_1, 0.5 : f32[4]
            %4 = where %2, %3, 0.0 : f32[4]
            %5 = where %1, %g_1, %4 : f32[4]
            yield %5
          }
          return %0
        }
    """,
    )


def where_on_numbers(x, k):
    return np.where(k, x * 2.0, x)


def test_where_on_a_condition_that_is_not_boolean_stays_out_of_the_group():
    """The kernel uses the condition as a mask; an integer one would need a conversion first."""
    graph = staged_graph(where_on_numbers, np.ones(4, np.float32), np.ones(4, np.int64))
    assert_unchanged_by(FuseElementwise, graph)


def mlp_layer_gradient(x, w, b):
    h = np.maximum(x @ w + b, 0)
    return (h * h).sum()


def test_the_relu_adjoint_of_a_layer_fuses_into_one_group():
    import dy2st

    x, w, b = np.ones((8, 4), np.float32), np.ones((4, 4), np.float32), np.ones(4, np.float32)
    graph = dy2st.grad(mlp_layer_gradient, argnums=(1, 2)).graph(x, w, b)
    groups = [op for op in graph.walk() if op.name == "fused"]
    selects = [op for op in graph.walk() if op.name == "where"]
    assert selects and all(op.parent is not graph.body for op in selects)
    backward = [g for g in groups if any(inner.name == "where" for inner in g.regions[0].block.ops)]
    assert len(backward) == 1
    assert [inner.name for inner in backward[0].regions[0].block.ops].count("where") == 2
