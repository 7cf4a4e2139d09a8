"""Dead code elimination: golden IR, region pruning, side effects, and results after the pass."""

import numpy as np
import pytest
from pass_harness import (
    BOOL,
    F32,
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
    staged_graph,
    tensor_type,
)

import dy2st
from dy2st.passes.dce import DeadCodeElimination


def unused_values(x):
    unused = np.exp(x) * 2.0
    y = x + 1.0
    print(y)
    z = np.sin(y)
    return y


def test_removes_unused_chains_and_keeps_print():
    graph = staged_graph(unused_values, np.ones(3, np.float32))
    assert_ir(
        graph,
        """
        func @unused_values(%x: f32[3]) -> f32[3] {
          %0 = exp %x : f32[3]
          %unused = multiply %0, 2.0 : f32[3]
          %y = add %x, 1.0 : f32[3]
          print %y {end='\\n', sep=' ', template=(None,)}
          %1 = sin %y : f32[3]
          return %y
        }
    """,
    )
    assert run_pass(DeadCodeElimination, graph) is True
    assert_ir(
        graph,
        """
        func @unused_values(%x: f32[3]) -> f32[3] {
          %y = add %x, 1.0 : f32[3]
          print %y {end='\\n', sep=' ', template=(None,)}
          return %y
        }
    """,
    )


def all_live(x):
    return np.sin(x) + x


def test_live_graph_is_left_unchanged():
    graph = staged_graph(all_live, np.ones(3, np.float32))
    assert_unchanged_by(DeadCodeElimination, graph)


def loop_graph(result_index, *, cond_reads_count=False, h_reads_count=False, print_count=False):
    """A loop carrying (i, h, count): i counts to n, h = tanh(h), count += 1; returns one result."""
    builder, (x, n) = new_builder("loop", x=tensor_type(F32, 4), n=tensor_type(I64))
    with builder:

        def cond(i, h, count):
            keep_going = emit(builder, "less", i, n)
            if cond_reads_count:
                small = emit(builder, "less", count, const(builder, 10.0))
                keep_going = emit(builder, "logical_and", keep_going, small)
            return keep_going

        def body(i, h, count):
            h_next = emit(builder, "tanh", h)
            if h_reads_count:
                h_next = emit(builder, "add", h_next, count)
            if print_count:
                emit_print(builder, count)
            i_next = emit(builder, "add", i, const(builder, 1))
            return [i_next, h_next, emit(builder, "add", count, const(builder, 1.0))]

        inits = [const(builder, np.int64(0)), x, const(builder, np.float32(0))]
        loop = emit_while(builder, inits, ["i", "h", "count"], cond, body)
        return builder.finish([loop.results[result_index]])


def test_drops_loop_carried_value_nothing_needs():
    graph = loop_graph(1)
    x, n = np.linspace(-1, 1, 4).astype(np.float32), np.array(3)
    expected = execute(graph, x, n)
    assert run_pass(DeadCodeElimination, graph) is True
    assert_ir(
        graph,
        """
        func @loop(%x: f32[4], %n: i64[]) -> f32[4] {
          %0 = const dense<0> : i64[]
          %1, %2 = while_loop (%0, %x) : (i64[], f32[4])
              cond (%i: i64[], %h: f32[4]) {
            %3 = less %i, %n : bool[]
            yield %3
          } body (%i_1: i64[], %h_1: f32[4]) {
            %4 = tanh %h_1 : f32[4]
            %5 = add %i_1, 1 : i64[]
            yield %5, %4
          }
          return %2
        }
    """,
    )
    assert_same_results(execute(graph, x, n), expected)


def test_drops_every_carried_value_but_the_counter():
    graph = loop_graph(0)
    assert run_pass(DeadCodeElimination, graph) is True
    assert_ir(
        graph,
        """
        func @loop(%x: f32[4], %n: i64[]) -> i64[] {
          %0 = const dense<0> : i64[]
          %1 = while_loop (%0) : i64[]
              cond (%i: i64[]) {
            %2 = less %i, %n : bool[]
            yield %2
          } body (%i_1: i64[]) {
            %3 = add %i_1, 1 : i64[]
            yield %3
          }
          return %1
        }
    """,
    )
    assert_same_results(execute(graph, np.zeros(4, np.float32), np.array(5)), [np.int64(5)])


def test_keeps_carried_value_read_by_the_condition():
    assert_unchanged_by(DeadCodeElimination, loop_graph(1, cond_reads_count=True))


def test_keeps_carried_value_another_carried_value_reads():
    assert_unchanged_by(DeadCodeElimination, loop_graph(1, h_reads_count=True))


def test_keeps_carried_value_a_print_reads():
    assert_unchanged_by(DeadCodeElimination, loop_graph(1, print_count=True))


def test_removes_unused_loop_without_side_effects():
    builder, (x, n) = new_builder("loop", x=tensor_type(F32, 4), n=tensor_type(I64))
    with builder:
        emit_while(
            builder,
            [const(builder, np.int64(0))],
            ["i"],
            lambda i: emit(builder, "less", i, n),
            lambda i: [emit(builder, "add", i, const(builder, 1))],
        )
        graph = builder.finish([x])
    assert run_pass(DeadCodeElimination, graph) is True
    assert [op.name for op in graph.walk()] == ["return"]


def branches_graph():
    builder, (x, p) = new_builder("branches", x=tensor_type(F32, 4), p=tensor_type(BOOL))
    with builder:
        both = emit_cond(
            builder, p, lambda: [emit(builder, "sin", x), emit(builder, "cos", x)], lambda: [emit(builder, "exp", x), x]
        )
        emit_cond(builder, p, lambda: [emit(builder, "sin", x)], lambda: [x])

        def print_x():
            emit_print(builder, x)
            return []

        emit_cond(builder, p, print_x, lambda: [])
        return builder.finish([both.results[1]])


def test_prunes_cond_results_and_unused_conds_but_keeps_side_effects(capsys):
    graph = branches_graph()
    assert run_pass(DeadCodeElimination, graph) is True
    assert_ir(
        graph,
        """
        func @branches(%x: f32[4], %p: bool[]) -> f32[4] {
          %0 = cond %p -> f32[4] {
            %1 = cos %x : f32[4]
            yield %1
          } else {
            yield %x
          }
          cond %p {
            print %x {template=(None,)}
            yield
          } else {
            yield
          }
          return %0
        }
    """,
    )
    x = np.arange(4, dtype=np.float32)
    assert_same_results(execute(graph, x, np.array(True)), [np.cos(x)])
    assert capsys.readouterr().out == f"{x}\n"
    assert_same_results(execute(graph, x, np.array(False)), [x])
    assert capsys.readouterr().out == ""
    assert_unchanged_by(DeadCodeElimination, graph)


def checked(x):
    y = x * 2.0
    unused = y + 1.0
    assert np.all(y > -100), "too small"
    return x


def test_keeps_an_assert_and_what_it_reads():
    graph = staged_graph(checked, np.ones(3, np.float32))
    assert run_pass(DeadCodeElimination, graph) is True
    names = [op.name for op in graph.walk() if op.name != "const"]
    assert names == ["multiply", "greater", "all", "assert", "return"]
    converted = dy2st.to_static(checked)
    x = np.ones(3, np.float32)
    assert_same_results([converted(x)], [x])
    with pytest.raises(dy2st.GraphAssertionError, match="too small") as info:
        converted(np.full(3, -60.0, np.float32))
    assert f"test_pass_dce.py:{checked.__code__.co_firstlineno + 3}" in str(info.value)


def positive_sum_stored(x, out):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0:
            s += x[i]  # s becomes a NumPy float here: the loop tracks its kind
    out[0] = s  # the kind matters to nobody: a store casts either
    return out


def positive_sum_returned(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0:
            s += x[i]
    return s  # a Python float or a NumPy float, as eager: the kind is needed


def test_a_carried_value_only_one_branch_of_a_cond_passes_on_is_dropped():
    from dy2st.ir.opcodes import WHILE_LOOP

    x = np.array([1.0, -2.0, 3.0, -4.0, 5.0, 0.5, -1.0])
    stored = dy2st.to_static(positive_sum_stored)
    (loop,) = [op for op in stored.graph(x, np.zeros(1)).walk() if op.name == WHILE_LOOP]
    assert not any("kind" in (r.name_hint or "") for r in loop.results), [r.name_hint for r in loop.results]
    np.testing.assert_array_equal(stored(x, np.zeros(1)), [9.5])
    returned = dy2st.to_static(positive_sum_returned)
    (loop,) = [op for op in returned.graph(x).walk() if op.name == WHILE_LOOP]
    assert any("kind" in (r.name_hint or "") for r in loop.results)
    for data in (x, -x):  # a NumPy float, then the Python float 0.0 (no positive element)
        result = returned(data)
        assert result == positive_sum_returned(data) and type(result) is type(positive_sum_returned(data))
