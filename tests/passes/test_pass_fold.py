"""Constant folding: literal constants only, exact types, errors left to run time, constant conds."""

import warnings

import numpy as np
from pass_harness import (
    F32,
    assert_ir,
    assert_same_results,
    assert_unchanged_by,
    const,
    emit,
    emit_cond,
    execute,
    new_builder,
    run_pass,
    staged_graph,
    tensor_type,
)

from dy2st.passes.fold import MAX_FOLDED_ELEMENTS, ConstantFolding


def literals_graph():
    builder, (x,) = new_builder("literals", x=tensor_type(F32, 3))
    with builder:
        doubled = emit(builder, "multiply", const(builder, np.array([1.0, 2.0, 3.0], np.float32)), const(builder, 2))
        total = emit(builder, "sum", doubled, axis=None, keepdims=False)
        weak_only = emit(builder, "add", const(builder, 1), const(builder, 2))
        return builder.finish([emit(builder, "add", x, total), weak_only])


def test_folds_ops_on_literal_constants_to_strong_constants_of_the_rule_type():
    graph = literals_graph()
    assert run_pass(ConstantFolding, graph) is True
    assert_ir(
        graph,
        """
        func @literals(%x: f32[3]) -> (f32[3], i64[]) {
          %0 = const dense<[1., 2., 3.]> : f32[3]
          %1 = const dense<[2., 4., 6.]> : f32[3]
          %2 = const dense<12.> : f32[]
          %3 = const dense<3> : i64[]
          %4 = add %x, %2 : f32[3]
          return %4, %3
        }
    """,
    )
    folded_total = graph.body.ops[2]
    assert folded_total.results[0].type.weak is False
    assert folded_total.attrs["value"].dtype == np.float32
    x = np.array([0.5, 1.5, -1.0], np.float32)
    assert_same_results(execute(graph, x), [x + np.float32(12), np.int64(3)])


def test_graph_without_literal_arithmetic_is_left_unchanged():
    graph = literals_graph()
    run_pass(ConstantFolding, graph)
    assert_unchanged_by(ConstantFolding, graph)


W = np.ones(3, np.float32)


def reads_a_global(x):
    return x + W * 2


def test_captured_arrays_are_never_folded():
    graph = staged_graph(reads_a_global, np.ones(3, np.float32))
    assert_unchanged_by(ConstantFolding, graph)


def test_leaves_errors_and_large_results_to_run_time():
    builder, (x,) = new_builder("runtime", x=tensor_type(F32, 3))
    with builder:
        division_by_zero = emit(builder, "divide", const(builder, np.float64(1.0)), const(builder, 0.0))
        big = emit(builder, "add", const(builder, np.zeros(MAX_FOLDED_ELEMENTS + 1, np.float32)), const(builder, 1.0))
        graph = builder.finish([division_by_zero, big])
    assert_unchanged_by(ConstantFolding, graph)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result, _ = execute(graph, np.zeros(3, np.float32))
    assert result == np.inf and any("divide by zero" in str(w.message) for w in caught)


def constant_branch_graph(predicate):
    builder, (x,) = new_builder("branch", x=tensor_type(F32, 3))
    with builder:

        def otherwise():
            two = emit(builder, "add", const(builder, np.float32(1)), const(builder, 1.0))
            return [emit(builder, "multiply", emit(builder, "cos", x), two)]

        branch = emit_cond(builder, const(builder, predicate), lambda: [emit(builder, "sin", x)], otherwise)
        return builder.finish([branch.result])


def test_inlines_the_branch_a_constant_predicate_selects():
    graph = constant_branch_graph(np.bool_(False))
    assert run_pass(ConstantFolding, graph) is True
    assert_ir(
        graph,
        """
        func @branch(%x: f32[3]) -> f32[3] {
          %0 = const dense<False> : bool[]
          %1 = const dense<1.> : f32[]
          %2 = const dense<2.> : f32[]
          %3 = cos %x : f32[3]
          %4 = multiply %3, %2 : f32[3]
          return %4
        }
    """,
    )
    x = np.array([0.0, 1.0, 2.0], np.float32)
    assert_same_results(execute(graph, x), [np.cos(x) * np.float32(2)])

    graph = constant_branch_graph(np.bool_(True))
    assert run_pass(ConstantFolding, graph) is True
    assert [op.name for op in graph.walk()] == ["const", "sin", "return"]
    assert_same_results(execute(graph, x), [np.sin(x)])


def test_a_folded_output_is_a_fresh_array_at_every_call():
    builder, (x,) = new_builder("folded_output", x=tensor_type(F32, 3))
    with builder:
        doubled = emit(builder, "multiply", const(builder, np.array([1.0, 2.0, 3.0], np.float32)), const(builder, 2))
        graph = builder.finish([doubled])
    assert run_pass(ConstantFolding, graph) is True
    assert graph.outputs[0].op.name == "const"
    x = np.zeros(3, np.float32)
    (first,) = execute(graph, x)
    first[:] = -1
    assert_same_results(execute(graph, x), [np.array([2.0, 4.0, 6.0], np.float32)])


def python_int_arithmetic_graph(left):
    builder, (x,) = new_builder("python_ints", x=tensor_type(F32, 3))
    with builder:
        product = emit(builder, "multiply", const(builder, left), const(builder, 2))
        number = emit(builder, "as_python_number", product)
        return builder.finish([x, number])


def test_python_int_arithmetic_folds_as_python_computes_it():
    # 2**62 * 2 is 2**63 for the eager code's Python ints; int64 arithmetic would give -2**63.
    graph = python_int_arithmetic_graph(2**62)
    run_pass(ConstantFolding, graph)
    assert [op.name for op in graph.body.ops] == ["const", "const", "multiply", "as_python_number", "return"]
    small = python_int_arithmetic_graph(21)
    run_pass(ConstantFolding, small)
    (folded,) = [op for op in small.body.ops if op.name == "const" and op.results[0] in small.outputs]
    assert folded.attrs["value"] == 42 and type(folded.attrs["value"]) is int
