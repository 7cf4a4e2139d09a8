"""The in-place-updates pass on hand-built graphs: golden IR of its decisions and of the copies it
adds before loops, and runs of the result against NumPy."""

import numpy as np
from pass_harness import (
    BOOL,
    F64,
    HAND_BUILT,
    I64,
    assert_ir,
    assert_same_results,
    const,
    emit,
    emit_cond,
    emit_while,
    execute,
    new_builder,
    run_pass,
    staged_graph,
    tensor_type,
)

from dy2st.backend.numpy.executor import Executor
from dy2st.ir.core import IN_PLACE_UPDATE, WRITES_BACK
from dy2st.ir.opdefs import get_op
from dy2st.ops.indexing import COPY_IF_OVERLAPPING, TENSOR_SLOT
from dy2st.passes.in_place import InPlaceUpdates
from dy2st.passes.memory_plan import MemoryPlan
from dy2st.passes.pipeline import optimize


def setitem(builder, base, value, *indices, template=(0,)):
    return builder.emit("setitem", [base, value, *indices], {"template": template}, loc=HAND_BUILT).result


def in_place(graph) -> list[bool]:
    return [op.attrs.get(IN_PLACE_UPDATE) is not None for op in graph.walk() if op.name == "setitem"]


def test_an_update_of_a_dead_fresh_array_runs_in_place_and_prints_so():
    builder, (x,) = new_builder("f", x=tensor_type(F64, 3))
    with builder:
        A = emit(builder, "multiply", x, const(builder, 2.0))
        A_1 = setitem(builder, A, const(builder, 0.0))
        graph = builder.finish([emit(builder, "sum", A_1, axis=None, keepdims=False)])
    assert run_pass(InPlaceUpdates, graph) is True
    assert_ir(
        graph,
        """
        func @f(%x: f64[3]) -> f64[] {
          %0 = multiply %x, 2.0 : f64[3]
          %1 = setitem %0, 0.0 {in_place_update=0, template=(0,)} : f64[3]
          %2 = sum %1 {axis=None, keepdims=False} : f64[]
          return %2
        }
        """,
    )
    assert run_pass(InPlaceUpdates, graph) is False  # the same decisions again


def test_constants_and_arguments_the_function_leaves_alone_are_never_overwritten():
    builder, (x,) = new_builder("f", x=tensor_type(F64, 3))
    with builder:
        K = const(builder, np.arange(3.0))
        graph = builder.finish([setitem(builder, K, const(builder, 0.0)), setitem(builder, x, const(builder, 0.0))])
    assert run_pass(InPlaceUpdates, graph) is False
    assert in_place(graph) == [False, False]
    x_value = np.ones(3)
    assert_same_results(execute(graph, x_value), [np.array([0.0, 1, 2]), np.array([0.0, 1, 1])])
    assert x_value.tolist() == [1.0, 1.0, 1.0]


def test_an_argument_written_back_after_the_call_is_updated_in_its_own_buffer():
    builder, (x,) = new_builder("f", x=tensor_type(F64, 3))
    with builder:
        x_1 = setitem(builder, x, const(builder, 7.0))
        graph = builder.finish([x_1], attrs={WRITES_BACK: (0,)})
    run_pass(InPlaceUpdates, graph)
    assert in_place(graph) == [True]
    x_value = np.ones(3)
    Executor(graph, {0: 0})(x_value)
    assert x_value.tolist() == [7.0, 1.0, 1.0]


def test_a_view_of_the_old_value_read_later_is_checked_for_overlap_when_the_update_runs():
    # row = A[0:2] is read after A[0] = 0.0: the update runs in A's buffer after a
    # copy_if_overlapping(A, row), which copies A here (A[0] is in row) and would not for A[3].
    for index, copies in ((0, True), (3, False)):
        builder, (x,) = new_builder("f", x=tensor_type(F64, 4))
        with builder:
            A = emit(builder, "multiply", x, const(builder, 2.0))
            row = builder.emit("getitem", [A], {"template": (slice(0, 2),)}, loc=HAND_BUILT).result
            A_1 = setitem(builder, A, const(builder, 0.0), template=(index,))
            graph = builder.finish([A_1, emit(builder, "add", row, const(builder, 1.0))])
        assert run_pass(InPlaceUpdates, graph) is True
        assert in_place(graph) == [True]
        (check,) = [op for op in graph.walk() if op.name == COPY_IF_OVERLAPPING]
        assert check.operands == [A, row]
        updated = np.array([2.0, 2, 2, 2])
        updated[index] = 0.0
        assert_same_results(execute(graph, np.ones(4)), [updated, np.array([3.0, 3])])
        A_value = np.full(4, 2.0)
        check_kernel = get_op(COPY_IF_OVERLAPPING).kernel
        assert check_kernel is not None
        assert (check_kernel(A_value, A_value[0:2], template=(index,), indices=0) is not A_value) == copies


def test_a_read_in_the_other_branch_does_not_stop_an_update_in_one_branch():
    builder, (x, flag) = new_builder("f", x=tensor_type(F64, 3), flag=tensor_type(BOOL))
    with builder:
        A = emit(builder, "multiply", x, const(builder, 2.0))
        cond = emit_cond(
            builder,
            flag,
            lambda: [setitem(builder, A, const(builder, 0.0))],
            lambda: [emit(builder, "add", A, const(builder, 1.0))],
        )
        graph = builder.finish(cond.results)
    run_pass(InPlaceUpdates, graph)
    assert in_place(graph) == [True]
    for taken, expected in ((True, [0.0, 2, 2]), (False, [3.0, 3, 3])):
        assert_same_results(execute(graph, np.ones(3), np.array(taken)), [np.array(expected)])


def loop_over(builder, start, n, x):
    """``while i < n: A[i] = x * i; i += 1`` from ``A = start``."""

    def body(i, A):
        A_next = setitem(builder, A, emit(builder, "multiply", x, i), i, template=(TENSOR_SLOT,))
        return [emit(builder, "add", i, const(builder, np.int64(1))), A_next]

    return emit_while(
        builder, [const(builder, np.int64(0)), start], ["i", "A"], lambda i, A: emit(builder, "less", i, n), body
    )


def test_a_loop_starting_from_an_argument_it_must_not_change_copies_it_once_before_the_loop():
    builder, (x, n) = new_builder("f", x=tensor_type(F64, 3), n=tensor_type(I64))
    with builder:
        start = emit(builder, "reshape", emit(builder, "tile", x, reps=(2,)), shape=(2, 3))
        loop = loop_over(builder, start, n, x)
        graph = builder.finish([loop.results[1], start])
    assert run_pass(InPlaceUpdates, graph) is True
    assert_ir(
        graph,
        """
        func @f(%x: f64[3], %n: i64[]) -> (f64[2,3], f64[2,3]) {
          %0 = tile %x {reps=(2,)} : f64[6]
          %1 = reshape %0 {shape=(2, 3)} : f64[2,3]
          %2 = const dense<0> : i64[]
          %3 = copy %1 : f64[2,3]
          %4, %5 = while_loop (%2, %3) : (i64[], f64[2,3])
              cond (%i: i64[], %A: f64[2,3]) {
            %6 = less %i, %n : bool[]
            yield %6
          } body (%i_1: i64[], %A_1: f64[2,3]) {
            %7 = multiply %x, %i_1 : f64[3]
            %8 = setitem %A_1, %7, %i_1 {in_place_update=0, template=(%,)} : f64[2,3]
            %9 = const dense<1> : i64[]
            %10 = add %i_1, %9 : i64[]
            yield %10, %8
          }
          return %5, %1
        }
        """,
    )
    x_value = np.array([1.0, 2.0, 3.0])
    rows = np.stack([x_value * 0, x_value * 1])
    assert_same_results(execute(graph, x_value, np.array(2)), [rows, np.stack([x_value, x_value])])


def test_nested_loops_copy_their_start_before_the_outer_loop():
    builder, (x, n) = new_builder("f", x=tensor_type(F64, 3), n=tensor_type(I64))
    with builder:
        K = const(builder, np.zeros((2, 3)))

        def outer_body(j, B):
            inner = loop_over(builder, B, n, x)
            return [emit(builder, "add", j, const(builder, np.int64(1))), inner.results[1]]

        outer = emit_while(
            builder, [const(builder, np.int64(0)), K], ["j", "B"], lambda j, B: emit(builder, "less", j, n), outer_body
        )
        graph = builder.finish([outer.results[1]])
    run_pass(InPlaceUpdates, graph)
    assert in_place(graph) == [True]
    top = [op.name for op in graph.body.ops]
    assert top[top.index("while_loop") - 1] == "copy"  # before the outer loop, not in its body
    assert "copy" not in [op.name for op in graph.body.ops[-2].regions[1].block.ops]
    assert_same_results(execute(graph, np.ones(3), np.array(2)), [np.array([[0.0, 0, 0], [1, 1, 1]])])
    assert_same_results(execute(graph, np.ones(3), np.array(2)), [np.array([[0.0, 0, 0], [1, 1, 1]])])


def test_a_loop_reading_the_old_value_after_the_update_keeps_copying():
    builder, (x, n) = new_builder("f", x=tensor_type(F64, 3), n=tensor_type(I64))
    with builder:

        def body(i, A, total):
            A_next = setitem(builder, A, x, i, template=(TENSOR_SLOT,))
            old = emit(builder, "sum", A, axis=None, keepdims=False)  # the old A, after the update
            return [emit(builder, "add", i, const(builder, np.int64(1))), A_next, emit(builder, "add", total, old)]

        start = emit(
            builder,
            "multiply",
            emit(builder, "reshape", emit(builder, "tile", x, reps=(2,)), shape=(2, 3)),
            const(builder, 0.0),
        )
        loop = emit_while(
            builder,
            [const(builder, np.int64(0)), start, const(builder, np.float64(0.0))],
            ["i", "A", "total"],
            lambda i, A, total: emit(builder, "less", i, n),
            body,
        )
        graph = builder.finish(loop.results[1:])
    assert run_pass(InPlaceUpdates, graph) is False
    assert_same_results(execute(graph, np.ones(3), np.array(2)), [np.ones((2, 3)), np.array(3.0)])


def test_the_planner_treats_an_update_in_place_as_a_view_of_its_operand():
    def update_and_return(x):
        A = x * 2.0
        A[0] = 0.0
        return A

    graph = optimize(staged_graph(update_and_return, np.ones(3)), passes=[InPlaceUpdates(), MemoryPlan()])
    assert in_place(graph) == [True]
    # A is returned through the update: a buffer kept across calls would be handed to the caller.
    assert all("out_buffer" not in op.attrs for op in graph.walk())
    run = Executor(graph)
    first = run(np.ones(3))[0]
    run(np.full(3, 5.0))
    assert first.tolist() == [0.0, 2.0, 2.0]
