"""The IR: golden text of staged graphs, the printer on hand-built graphs, and the verifier.

Goldens use ``graph(..., optimize=False)`` (the staged graph, before any pass), so they pin down
staging and printing only; the passes have their own golden tests.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import dy2st
from dy2st.ir.core import Block, Graph, Op, Region
from dy2st.ir.printer import print_graph
from dy2st.ir.types import TensorType
from dy2st.ir.verifier import VerificationError, verify

F32_4 = TensorType((4,), np.dtype(np.float32))
F32_4x3 = TensorType((4, 3), np.dtype(np.float32))
BOOL_0D = TensorType((), np.dtype(bool))
I64_0D = TensorType((), np.dtype(np.int64))
WEAK_I64 = TensorType((), np.dtype(np.int64), weak=True)

W = np.ones((3, 2), np.float32)


def golden(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


# --- goldens of staged graphs ----------------------------------------------------------------
@dy2st.to_static(static_argnames="scale")  # a constant of the graph, shown in the goldens
def affine_relu(x, b, scale=2.0):
    y = x @ W
    return np.maximum(y * scale + b, 0)


@dy2st.to_static
def column_stats(x):
    m = x.mean(axis=0)
    centered = x - m
    return {"mean": m, "var": (centered**2).mean(axis=0)}, x.T.reshape(-1)


@dy2st.to_static
def update_in_place(x, v):
    x[0] = v
    x += 1
    return x[1:].sum()


def test_golden_affine_relu_with_a_capture_and_a_python_constant():
    graph = affine_relu.graph(np.ones((4, 3), np.float32), np.zeros(2, np.float32), optimize=False)
    assert str(graph) == golden("""
        func @affine_relu(%x: f32[4,3], %b: f32[2])
            captures(%W: f32[3,2]) -> f32[4,2] {
          %y = matmul %x, %W : f32[4,2]
          %0 = multiply %y, 2.0 : f32[4,2]
          %1 = add %0, %b : f32[4,2]
          %2 = maximum %1, 0 : f32[4,2]
          return %2
        }
    """)


def test_golden_with_locations_names_the_users_lines():
    graph = affine_relu.graph(np.ones((4, 3), np.float32), np.zeros(2, np.float32), 3, optimize=False)
    first_line = affine_relu.fn.__code__.co_firstlineno
    y_line, return_line = first_line + 2, first_line + 3
    assert print_graph(graph, locs=True) == golden(f"""
        func @affine_relu(%x: f32[4,3], %b: f32[2])
            captures(%W: f32[3,2]) -> f32[4,2] {{
          %y = matmul %x, %W : f32[4,2]  # test_ir.py:{y_line}
          %0 = multiply %y, 3 : f32[4,2]  # test_ir.py:{return_line}
          %1 = add %0, %b : f32[4,2]  # test_ir.py:{return_line}
          %2 = maximum %1, 0 : f32[4,2]  # test_ir.py:{return_line}
          return %2
        }}
    """)


def test_golden_nested_results_and_attributes():
    graph = column_stats.graph(np.ones((4, 3), np.float32), optimize=False)
    assert str(graph) == golden("""
        func @column_stats(%x: f32[4,3]) -> (f32[3], f32[3], f32[12]) {
          %m = mean %x {axis=(0,), keepdims=False} : f32[3]
          %centered = subtract %x, %m : f32[4,3]
          %0 = square %centered : f32[4,3]
          %1 = mean %0 {axis=(0,), keepdims=False} : f32[3]
          %2 = transpose %x {axes=(1, 0)} : f32[3,4]
          %3 = reshape %2 {shape=(12,)} : f32[12]
          return %m, %1, %3
        }
    """)


def test_golden_in_place_updates_are_new_ssa_values_returned_for_writeback():
    graph = update_in_place.graph(np.arange(4.0), np.float64(3.0), optimize=False)
    assert str(graph) == golden("""
        func @update_in_place(%x: f64[4], %v: f64[]) -> (f64[], f64[4]) {
          %x_1 = setitem %x, %v {template=(0,)} : f64[4]
          %x_2 = add %x_1, 1 : f64[4]
          %0 = getitem %x_2 {template=(1:,)} : f64[3]
          %1 = sum %0 {axis=None, keepdims=False} : f64[]
          return %1, %x_2 {result_kinds=('scalar',), writes_back=(None, 0)}
        }
    """)


def test_printing_is_deterministic_across_builds():
    args = (np.ones((4, 3), np.float32),)
    assert str(column_stats.graph(*args, optimize=False)) == str(column_stats.graph(*args, optimize=False))


def test_staged_graphs_verify():
    verify(affine_relu.graph(np.ones((4, 3), np.float32), np.zeros(2, np.float32), optimize=False))
    verify(column_stats.graph(np.ones((4, 3), np.float32)))
    verify(update_in_place.graph(np.arange(4.0), np.float64(3.0)))


def test_walk_visits_every_op_in_program_order():
    graph = column_stats.graph(np.ones((4, 3), np.float32), optimize=False)
    # Python-scalar constants are ops too; the printer only shows them inline at their uses.
    assert [op.name for op in graph.walk()] == [
        "mean",
        "subtract",
        "square",
        "mean",
        "transpose",
        "reshape",
        "return",
    ]


# --- the printer on hand-built graphs ----------------------------------------------------------
def const(block: Block, value, type: TensorType) -> Op:
    return block.append(Op("const", [], [type], {"value": value}))


def cond_graph() -> Graph:
    """``y = cond(p, then: x + 1, else: -x)`` built by hand."""
    body = Block([F32_4, BOOL_0D], ["x", "p"])
    x, p = body.args
    then_block, else_block = Block(), Block()
    one = const(then_block, 1, WEAK_I64).result
    added = then_block.append(Op("add", [x, one], [F32_4])).result
    then_block.append(Op("yield", [added], []))
    negated = else_block.append(Op("negative", [x], [F32_4])).result
    else_block.append(Op("yield", [negated], []))
    cond = body.append(Op("cond", [p], [F32_4], regions=[Region(then_block), Region(else_block)]))
    cond.results[0].name_hint = "y"
    body.append(Op("return", [cond.result], []))
    return Graph("branchy", body, 2)


def while_graph() -> Graph:
    """``while i < 10: i = i + 1`` on a 0-d int64, built by hand."""
    body = Block([I64_0D], ["i"])
    cond_block, loop_block = Block([I64_0D], ["i"]), Block([I64_0D], ["i"])
    ten = const(cond_block, 10, WEAK_I64).result
    less = cond_block.append(Op("less", [cond_block.args[0], ten], [BOOL_0D])).result
    cond_block.append(Op("yield", [less], []))
    one = const(loop_block, 1, WEAK_I64).result
    step = loop_block.append(Op("add", [loop_block.args[0], one], [I64_0D])).result
    loop_block.append(Op("yield", [step], []))
    loop = body.append(Op("while_loop", [body.args[0]], [I64_0D], regions=[Region(cond_block), Region(loop_block)]))
    body.append(Op("return", [loop.result], []))
    return Graph("count", body, 1)


def test_printer_cond_regions():
    graph = cond_graph()
    verify(graph)
    assert str(graph) == golden("""
        func @branchy(%x: f32[4], %p: bool[]) -> f32[4] {
          %y = cond %p -> f32[4] {
            %0 = add %x, 1 : f32[4]
            yield %0
          } else {
            %1 = negative %x : f32[4]
            yield %1
          }
          return %y
        }
    """)


def test_printer_while_loop_regions_with_block_arguments():
    graph = while_graph()
    verify(graph)
    assert str(graph) == golden("""
        func @count(%i: i64[]) -> i64[] {
          %0 = while_loop (%i) : i64[]
              cond (%i_1: i64[]) {
            %1 = less %i_1, 10 : bool[]
            yield %1
          } body (%i_2: i64[]) {
            %2 = add %i_2, 1 : i64[]
            yield %2
          }
          return %0
        }
    """)


def test_printer_array_constants_and_no_results():
    body = Block()
    small = const(body, np.arange(3, dtype=np.int64), TensorType((3,), np.dtype(np.int64))).result
    big = const(body, np.zeros((4, 4), np.float32), TensorType((4, 4), np.dtype(np.float32))).result
    body.append(Op("return", [small, big], []))
    assert str(Graph("consts", body, 0)) == golden("""
        func @consts() -> (i64[3], f32[4,4]) {
          %0 = const dense<[0, 1, 2]> : i64[3]
          %1 = const <f32[4,4]> : f32[4,4]
          return %0, %1
        }
    """)


# --- the verifier --------------------------------------------------------------------------
def test_verifier_rejects_use_before_definition():
    body = Block([F32_4], ["x"])
    later = Op("negative", [body.args[0]], [F32_4])
    body.append(Op("add", [body.args[0], later.result], [F32_4]))
    body.append(later)
    body.append(Op("return", [later.result], []))
    with pytest.raises(VerificationError, match=r"'add': operand <Value :f32\[4\]> is used before it is defined"):
        verify(Graph("bad", body, 1))


def test_verifier_rejects_a_result_type_the_rule_does_not_infer():
    body = Block([F32_4], ["x"])
    wrong = body.append(Op("negative", [body.args[0]], [TensorType((4,), np.dtype(np.float64))]))
    body.append(Op("return", [wrong.result], []))
    with pytest.raises(
        VerificationError, match=r"'negative': result types \[f64\[4\]\] differ from the rule's \[f32\[4\]\]"
    ):
        verify(Graph("bad", body, 1))


def test_verifier_rejects_a_missing_terminator():
    body = Block([F32_4], ["x"])
    body.append(Op("negative", [body.args[0]], [F32_4]))
    with pytest.raises(VerificationError, match="block must end with 'return'"):
        verify(Graph("bad", body, 1))


def test_verifier_rejects_a_non_bool_cond_predicate():
    graph = cond_graph()
    cond = graph.body.ops[0]
    cond.operands = [graph.body.args[0]]  # the f32[4] x instead of the bool[] p
    with pytest.raises(VerificationError, match=r"'cond': predicate must be bool\[\], got f32\[4\]"):
        verify(graph)


def test_verifier_rejects_a_branch_yielding_the_wrong_type():
    graph = cond_graph()
    else_block = graph.body.ops[0].regions[1].block
    else_block.ops[-1].operands = [graph.body.args[1]]  # yields the bool[] predicate
    with pytest.raises(VerificationError, match=r"'cond': region yields \[bool\[\]\], results are \[f32\[4\]\]"):
        verify(graph)


def test_verifier_rejects_while_loop_region_arity_mismatch():
    graph = while_graph()
    loop = graph.body.ops[0]
    loop.regions[1].block.add_arg(I64_0D, "extra")
    with pytest.raises(VerificationError, match="'while_loop': body region arguments"):
        verify(graph)


def test_verifier_rejects_a_value_defined_twice():
    body = Block([F32_4], ["x"])
    op = Op("negative", [body.args[0]], [F32_4])
    body.append(op)
    body.append(op)
    body.append(Op("return", [op.result], []))
    with pytest.raises(VerificationError, match="defined twice"):
        verify(Graph("bad", body, 1))


def test_verifier_rejects_a_region_value_used_outside_its_region():
    graph = cond_graph()
    inner = graph.body.ops[0].regions[0].block.ops[1].result  # the add inside the then-branch
    graph.body.ops[-1].operands = [inner]
    with pytest.raises(VerificationError, match="'return': operand .* used before it is defined"):
        verify(graph)


def test_builder_const_refuses_a_non_constant_with_a_type_error():
    """A shadowed name once turned this refusal into an UnboundLocalError."""
    from dy2st.staging.builder import GraphBuilder

    builder = GraphBuilder("g")
    with pytest.raises(TypeError, match="not a constant: list"):
        builder.const([1, 2])
