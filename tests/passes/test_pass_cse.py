"""Common subexpression elimination: golden IR, strict attribute equality, scoping, side effects."""

import numpy as np
from pass_harness import (
    BOOL,
    F32,
    assert_ir,
    assert_same_results,
    assert_unchanged_by,
    const,
    emit,
    emit_cond,
    emit_print,
    execute,
    new_builder,
    run_pass,
    staged_graph,
    tensor_type,
)

from dy2st.ir.attribute_keys import attr_key
from dy2st.passes.cse import CommonSubexpressionElimination

W = np.ones(3, np.float32)


def repeated(x):
    z = (x + W) * 2.0
    q = (x + W) * 2.0
    a = x.T + x.T
    return z + q, a


def test_merges_repeated_expressions():
    graph = staged_graph(repeated, np.ones(3, np.float32))
    assert_ir(
        graph,
        """
        func @repeated(%x: f32[3])
            captures(%W: f32[3]) -> (f32[3], f32[3]) {
          %0 = add %x, %W : f32[3]
          %z = multiply %0, 2.0 : f32[3]
          %1 = add %x, %W : f32[3]
          %q = multiply %1, 2.0 : f32[3]
          %2 = transpose %x {axes=(0,)} : f32[3]
          %3 = transpose %x {axes=(0,)} : f32[3]
          %a = add %2, %3 : f32[3]
          %4 = add %z, %q : f32[3]
          return %4, %a
        }
    """,
    )
    assert run_pass(CommonSubexpressionElimination, graph) is True
    assert_ir(
        graph,
        """
        func @repeated(%x: f32[3])
            captures(%W: f32[3]) -> (f32[3], f32[3]) {
          %0 = add %x, %W : f32[3]
          %z = multiply %0, 2.0 : f32[3]
          %1 = transpose %x {axes=(0,)} : f32[3]
          %a = add %1, %1 : f32[3]
          %2 = add %z, %z : f32[3]
          return %2, %a
        }
    """,
    )
    x = np.array([1.0, -2.0, 3.5], np.float32)
    assert_same_results(execute(graph, x, W), repeated(x))


def test_graph_without_repeats_is_left_unchanged():
    graph = staged_graph(repeated, np.ones(3, np.float32))
    run_pass(CommonSubexpressionElimination, graph)
    assert_unchanged_by(CommonSubexpressionElimination, graph)


def constants_graph():
    builder, (x,) = new_builder("constants", x=tensor_type(F32, 4))
    with builder:
        literals = [
            0.0,
            -0.0,
            0.0,
            1,
            True,
            np.float32("nan"),
            np.float32("nan"),
            np.arange(3, dtype=np.float32),
            np.arange(3, dtype=np.float32),
            np.arange(3, dtype=np.float64),
        ]
        values = [const(builder, v) for v in literals]
        return builder.finish(values)


def test_merges_constants_only_when_value_bits_and_type_agree():
    graph = constants_graph()
    assert run_pass(CommonSubexpressionElimination, graph) is True
    out = graph.outputs
    assert out[0] is out[2]  # 0.0 and 0.0
    assert out[1] is not out[0]  # -0.0 is not 0.0
    assert out[3] is not out[4]  # 1 is not True
    assert out[5] is out[6]  # NaN equals NaN bit for bit
    assert out[7] is out[8] and out[9] is not out[7]  # arrays: same dtype and bytes only
    assert [op.name for op in graph.walk()].count("const") == 7


def test_attribute_keys_compare_strictly():
    assert attr_key(0.0) != attr_key(-0.0)
    assert attr_key(float("nan")) == attr_key(float("nan"))
    assert attr_key(1) != attr_key(True) != attr_key(1.0)
    assert attr_key(np.zeros(2, np.float32)) != attr_key(np.zeros(2, np.float64))
    assert attr_key(np.zeros((2, 1))) != attr_key(np.zeros((1, 2)))
    assert attr_key((slice(None, 2), 1)) == attr_key((slice(None, 2), 1))
    assert attr_key(np.dtype("f4")) != attr_key(np.dtype("f8"))


def scoped_graph():
    builder, (x, p) = new_builder("scoped", x=tensor_type(F32, 4), p=tensor_type(BOOL))
    with builder:
        emit(builder, "sin", x)

        def then_branch():
            return [emit(builder, "add", emit(builder, "sin", x), emit(builder, "cos", x))]

        branch = emit_cond(builder, p, then_branch, lambda: [emit(builder, "cos", x)])
        after = emit(builder, "cos", x)
        emit_print(builder, x)
        emit_print(builder, x)
        return builder.finish([branch.result, after])


def test_outer_values_replace_region_values_but_never_the_reverse():
    graph = scoped_graph()
    assert run_pass(CommonSubexpressionElimination, graph) is True
    # `sin` in the then-branch reuses the outer one; the cos of each branch and the one after the
    # cond stay separate (a region's value is not visible to its sibling or after the cond).
    assert_ir(
        graph,
        """
        func @scoped(%x: f32[4], %p: bool[]) -> (f32[4], f32[4]) {
          %0 = sin %x : f32[4]
          %1 = cond %p -> f32[4] {
            %2 = cos %x : f32[4]
            %3 = add %0, %2 : f32[4]
            yield %3
          } else {
            %4 = cos %x : f32[4]
            yield %4
          }
          %5 = cos %x : f32[4]
          print %x {template=(None,)}
          print %x {template=(None,)}
          return %1, %5
        }
    """,
    )
    x = np.linspace(-1, 1, 4).astype(np.float32)
    assert_same_results(execute(graph, x, np.array(True)), [np.sin(x) + np.cos(x), np.cos(x)])


def swapped_operands(x, y):
    return x * y + y * x, np.maximum(x, y) - np.maximum(y, x), x - y + (y - x)


def test_commutative_ops_merge_with_swapped_operands_others_do_not():
    graph = staged_graph(swapped_operands, np.ones(3, np.float32), np.ones(3, np.float32))
    assert run_pass(CommonSubexpressionElimination, graph) is True
    names = [op.name for op in graph.walk()]
    assert names.count("multiply") == 1 and names.count("maximum") == 2 and names.count("subtract") == 3
    x = np.array([0.0, -0.0, 2.5], np.float32)
    y = np.array([-0.0, 0.0, -1.0], np.float32)
    assert_same_results(execute(graph, x, y), swapped_operands(x, y))
