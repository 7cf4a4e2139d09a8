"""The memory-plan pass: which ops get buffers, in-place reuse, liveness across regions, the report."""

import numpy as np
from pass_harness import (
    BOOL,
    F32,
    I64,
    const,
    emit,
    emit_cond,
    emit_while,
    new_builder,
    run_pass,
    staged_graph,
    tensor_type,
)

import dy2st
from dy2st.backend.numpy.executor import Executor
from dy2st.ir.printer import print_graph
from dy2st.passes.memory_plan import MemoryPlan, clear_plan, memory_report, planned_slots

MIB = 1 << 20


def plan_of(graph):
    """op name numbered by occurrence (``add2``: the second add) -> (out_buffer, in_place), for
    every planned op."""
    plan, seen = {}, {}
    for op in graph.walk():
        n = seen[op.name] = seen.get(op.name, 0) + 1
        if "out_buffer" in op.attrs:
            plan[f"{op.name}{n}"] = (op.attrs["out_buffer"], op.attrs.get("in_place"))
    return plan


def mlp(x, W1, b1, W2, b2, W3, b3):
    h = np.maximum(x @ W1 + b1, 0)
    h = np.maximum(h @ W2 + b2, 0)
    return h @ W3 + b3


def mlp_args(batch=8, width=16):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, width), dtype=np.float32)
    layers = []
    for _ in range(3):
        layers += [rng.standard_normal((width, width), dtype=np.float32), rng.standard_normal(width, dtype=np.float32)]
    return (x, *layers)


def test_a_layer_chain_alternates_two_buffers_and_updates_in_place():
    graph = staged_graph(mlp, *mlp_args())
    assert run_pass(MemoryPlan, graph) is True
    # matmul never writes into its own operand; add and maximum overwrite the operand that dies.
    assert plan_of(graph) == {
        "matmul1": (0, None),
        "add1": (0, 0),
        "maximum1": (0, 0),
        "matmul2": (1, None),
        "add2": (1, 0),
        "maximum2": (1, 0),
        "matmul3": (0, None),
        "add3": (0, 0),
    }
    slots, per_call = planned_slots(graph)
    assert per_call == {0}  # slot 0 ends up holding the result: allocated at every call
    assert slots[1] == ((8, 16), F32)


def test_the_printer_shows_the_plan():
    graph = staged_graph(mlp, *mlp_args())
    run_pass(MemoryPlan, graph)
    text = print_graph(graph)
    assert "matmul %x, %W1 {out_buffer=0} : f32[8,16]" in text
    assert "add %0, %b1 {in_place=0, out_buffer=0} : f32[8,16]" in text


def test_running_the_pass_twice_gives_the_same_plan():
    graph = staged_graph(mlp, *mlp_args())
    run_pass(MemoryPlan, graph)
    first = print_graph(graph)
    run_pass(MemoryPlan, graph)
    assert print_graph(graph) == first
    assert clear_plan(graph) is True and plan_of(graph) == {}


def test_values_an_output_views_and_zero_d_results_are_left_to_numpy():
    def f(x):
        s = x * 2.0
        return s.T, np.sum(s), np.sum(s * 3.0, axis=0)

    graph = staged_graph(f, np.ones((4, 3), np.float32))
    run_pass(MemoryPlan, graph)
    # s: viewed by a returned transpose; sum(s): a 0-d NumPy scalar in eager code; s * 3.0: a
    # reduction reads it, so it keeps the memory order NumPy gives it (x's, which may be
    # Fortran order); the last sum: an output alone in its buffer, which NumPy may as well allocate.
    assert plan_of(graph) == {}


def test_integer_sums_are_not_planned_because_numpy_widens_their_accumulator():
    def f(x):
        return np.sum(x + 1, axis=0)

    graph = staged_graph(f, np.ones((4, 3), np.int32))
    run_pass(MemoryPlan, graph)
    assert "sum1" not in plan_of(graph)


def test_lower_bound_and_peaks_of_a_hand_built_graph():
    # a = exp(x); b = a * 2; c = a + b; d = sqrt(c); return d     (each 1 MiB of float32)
    n = MIB // 4
    builder, (x,) = new_builder("chain", x=tensor_type(F32, n))
    with builder:
        a = emit(builder, "exp", x)
        b = emit(builder, "multiply", a, const(builder, 2.0))
        c = emit(builder, "add", a, b)
        d = emit(builder, "sqrt", c)
        graph = builder.finish([d])
    report = memory_report(graph)
    # Live sets (closed intervals): {a}, {a,b}, {a,b,c}, {c,d}: the largest is 3 MiB.
    assert report.lower_bound == 3 * MIB
    assert report.eager_estimate == 3 * MIB
    run_pass(MemoryPlan, graph)
    # add overwrites a (b dies there too, but one overwrite is enough), sqrt overwrites c.
    assert plan_of(graph) == {"exp1": (0, None), "multiply1": (1, None), "add1": (0, 0), "sqrt1": (0, 0)}
    report = memory_report(graph)
    assert report.planned_peak == 2 * MIB <= report.lower_bound
    assert report.persistent == MIB  # slot 0 holds the result, so only slot 1 is kept across calls


def test_planned_peak_is_at_most_the_unplanned_live_set_on_an_mlp():
    graph = staged_graph(mlp, *mlp_args(64, 256))
    report = memory_report(graph)
    assert report.planned_peak <= report.lower_bound <= report.eager_estimate


def test_a_value_used_inside_a_loop_keeps_its_buffer_for_the_whole_loop():
    # t = x * 3 is read in every iteration: a buffer of the body must not take its slot.
    vec = tensor_type(F32, 16)
    builder, (x, n) = new_builder("loop", x=vec, n=tensor_type(I64))
    with builder:
        t = emit(builder, "multiply", x, const(builder, 3.0))

        def body(i, acc):
            u = emit(builder, "exp", emit(builder, "negative", acc))  # two body buffers
            return [emit(builder, "add", i, const(builder, 1)), emit(builder, "add", u, t)]

        loop = emit_while(
            builder, [const(builder, np.int64(0)), x], ["i", "acc"], lambda i, acc: emit(builder, "less", i, n), body
        )
        graph = builder.finish([emit(builder, "multiply", loop.results[1], t)])
    run_pass(MemoryPlan, graph)
    plan = plan_of(graph)
    t_slot = plan["multiply1"][0]
    assert t_slot not in (plan["negative1"][0], plan["exp1"][0])
    assert plan["exp1"] == (plan["negative1"][0], 0)  # in place inside the body
    # the yielded value is left to NumPy: the next iteration still reads the carried one.
    assert "add2" not in plan and "add1" not in plan

    x_value = np.linspace(-1, 1, 16, dtype=np.float32)
    expected = x_value.copy()
    for _ in range(4):
        expected = np.exp(-expected) + x_value * 3
    expected = expected * (x_value * 3)
    run = Executor(graph)
    for _ in range(2):  # the second call reuses the buffers
        (result,) = run(x_value, np.array(4))
        np.testing.assert_array_equal(result, expected)


def test_branch_results_share_one_buffer_the_cond_result_takes_over():
    vec = tensor_type(F32, 32)
    builder, (x, p) = new_builder("branches", x=vec, p=tensor_type(BOOL))
    with builder:
        branch = emit_cond(
            builder,
            p,
            lambda: [emit(builder, "sin", emit(builder, "exp", x))],
            lambda: [emit(builder, "cos", x)],
        )
        graph = builder.finish([emit(builder, "add", branch.result, x)])
    # Only one branch runs: the bound is {exp, sin} or {branch result, add}, 2 x 128 bytes.
    assert memory_report(graph).lower_bound == 256
    run_pass(MemoryPlan, graph)
    # exp dies in the branch, so sin overwrites it; cos (the other branch) takes the same buffer,
    # which the cond result keeps until the add. The add is the output: left to NumPy.
    assert plan_of(graph) == {"exp1": (0, None), "sin1": (0, 0), "cos1": (0, None)}
    run = Executor(graph)
    x_value = np.linspace(0, 1, 32, dtype=np.float32)
    for flag in (True, False, True):
        (result,) = run(x_value, np.array(flag))
        expected = (np.sin(np.exp(x_value)) if flag else np.cos(x_value)) + x_value
        np.testing.assert_array_equal(result, expected)


def diagonal_after_reuse(x):
    a = x * 2.0
    d = np.diag(a)  # NumPy returns a view of a for a matrix; the op is not flagged as a view
    e = np.exp(x)  # would take a's buffer if a were dead after np.diag
    return d + e[0]


def test_a_result_that_may_view_its_operand_keeps_the_operand_buffer_alive():
    x = np.linspace(0, 1, 16 * 16).reshape(16, 16)
    static = dy2st.to_static(diagonal_after_reuse)
    graph = static.graph(x)
    assert plan_of(graph)["multiply1"][0] != plan_of(graph)["exp1"][0]
    for _ in range(2):
        np.testing.assert_array_equal(static(x), diagonal_after_reuse(x))


def test_a_branch_result_returned_or_carried_by_a_loop_is_left_to_numpy():
    vec = tensor_type(F32, 32)
    builder, (x, p) = new_builder("returned_branch", x=vec, p=tensor_type(BOOL))
    with builder:
        branch = emit_cond(builder, p, lambda: [emit(builder, "exp", x)], lambda: [emit(builder, "cos", x)])
        graph = builder.finish([branch.result])
    run_pass(MemoryPlan, graph)
    assert plan_of(graph) == {}  # the caller owns the output: never a buffer kept across calls
    x_value = np.linspace(0, 1, 32, dtype=np.float32)
    run = Executor(graph)
    (first,) = run(x_value, np.array(True))
    (second,) = run(x_value, np.array(True))
    assert first is not second
    np.testing.assert_array_equal(first, np.exp(x_value))


def seed_like(x, flag, w1, w2, b):
    if flag > 0:
        y = w1 @ x
    else:
        y = w2 @ x
    return np.maximum(y + b, 0)


def test_seed_model_matmuls_write_into_one_kept_buffer_and_match_eager():
    rng = np.random.default_rng(1)
    x, w1, w2 = (rng.standard_normal((16, 16), dtype=np.float32) for _ in range(3))
    b = rng.standard_normal(16, dtype=np.float32)
    static = dy2st.to_static(seed_like)
    graph = static.graph(x, np.array(1), w1, w2, b)
    assert plan_of(graph) == {"matmul1": (0, None), "matmul2": (0, None)}
    for flag in (1, -1, 1):
        got = static(x, np.array(flag), w1, w2, b)
        want = seed_like(x, np.array(flag), w1, w2, b)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def shrinking_columns(L, v):
    total = np.zeros(1)
    for j in range(1, 5):
        total = total + (L[j:, :] @ v)[:1]  # products of 7, 6, 5, 4 rows, each dead at once
    return total


def test_smaller_values_reuse_the_first_elements_of_a_larger_free_buffer():
    L, v = np.arange(32.0).reshape(8, 4), np.arange(4.0)
    graph = staged_graph(shrinking_columns, L, v)
    run_pass(MemoryPlan, graph)
    products = [op for op in graph.walk() if op.name == "matmul"]
    assert {op.attrs["out_buffer"] for op in products} == {0}  # not one buffer per size kept across calls
    slots, per_call = planned_slots(graph)
    assert slots[0] == ((7,), np.dtype(np.float64)) and 0 not in per_call
    run = Executor(graph)
    for _ in range(2):
        np.testing.assert_array_equal(run(L, v)[0], shrinking_columns(L, v))


def column_by_column(A):
    L = np.zeros_like(A)
    for j in range(A.shape[0]):  # rolled: L[j + 1 :, :j] has a data-dependent size
        L[j + 1 :, j] = A[j + 1 :, j] - L[j + 1 :, :j] @ L[j, :j]
    return L


def test_the_report_counts_what_has_a_size_before_the_graph_runs():
    A = np.eye(6) * 4.0
    graph = dy2st.to_static(column_by_column).graph(A)
    report = memory_report(graph)
    assert report.lower_bound >= A.nbytes  # L; the slices of data-dependent size are not counted
    assert report.planned_peak >= report.lower_bound
