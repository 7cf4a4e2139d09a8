"""The default pipeline: its order, its registry, and results equal to eager NumPy with it on."""

import numpy as np
from pass_harness import (
    BOOL,
    F32,
    I64,
    assert_same_results,
    const,
    emit,
    emit_cond,
    emit_print,
    emit_while,
    execute,
    new_builder,
    tensor_type,
)

import dy2st
from dy2st.passes.cse import CommonSubexpressionElimination
from dy2st.passes.dce import DeadCodeElimination
from dy2st.passes.fold import ConstantFolding
from dy2st.passes.licm import LoopInvariantCodeMotion
from dy2st.passes.pipeline import DEFAULT_PIPELINE, PASSES_BY_NAME, default_passes, optimize
from dy2st.passes.simplify import AlgebraicSimplification

CLEANUPS = ["simplify", "fold", "cse", "licm", "dce"]


def test_cleanups_run_first_in_their_documented_order():
    names = [p.name for p in default_passes()]
    assert names[: len(CLEANUPS)] == CLEANUPS
    assert len(set(names)) == len(names) == len(DEFAULT_PIPELINE)


def test_passes_by_name_maps_cli_spellings_to_classes():
    assert PASSES_BY_NAME["dce"] is DeadCodeElimination
    assert PASSES_BY_NAME["cse"] is CommonSubexpressionElimination
    assert PASSES_BY_NAME["fold"] is ConstantFolding
    assert PASSES_BY_NAME["simplify"] is AlgebraicSimplification
    assert PASSES_BY_NAME["licm"] is LoopInvariantCodeMotion
    assert all(cls.name == name for name, cls in PASSES_BY_NAME.items())


def test_after_each_sees_every_pass_and_whether_it_changed_the_graph():
    builder, (x,) = new_builder("identity", x=tensor_type(F32, 3))
    with builder:
        graph = builder.finish([emit(builder, "multiply", x, const(builder, 1))])
    seen = []
    optimize(
        graph,
        passes=default_passes()[: len(CLEANUPS)],
        after_each=lambda name, g, changed: seen.append((name, changed)),
    )
    assert seen == [("simplify", True), ("fold", False), ("cse", False), ("licm", False), ("dce", True)]
    assert graph.outputs == graph.inputs


W = np.linspace(-1, 1, 12).astype(np.float32).reshape(3, 4)
b = np.arange(4, dtype=np.float32)


def gelu_like(x):
    inner = x * 1 + 0.044715 * x**3
    y = 0.5 * x * (1.0 + np.tanh(0.7978845608 * inner))
    z = (y @ W + b) * 1
    return z.T.T + (y @ W + b), np.sum(x**2)


def test_optimized_function_equals_eager_numpy_across_calls_and_global_updates():
    converted = dy2st.to_static(gelu_like)
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.standard_normal((2, 3)).astype(np.float32)
        assert_same_results(converted(x), gelu_like(x))
    saved = W.copy()
    try:
        W[...] *= 2  # captured globals are read by reference: never folded into the graph
        x = rng.standard_normal((2, 3)).astype(np.float32)
        assert_same_results(converted(x), gelu_like(x))
    finally:
        W[...] = saved
    assert converted.num_graphs == 1
    names = [op.name for op in converted.graph(x).walk()]
    assert "power" not in names and "transpose" not in names
    assert names.count("matmul") == 1


def loop_and_branch_graph():
    """A loop whose body holds invariant work, a dead carried value, repeats and a cond."""
    builder, (x, n, p) = new_builder("regions", x=tensor_type(F32, 3), n=tensor_type(I64), p=tensor_type(BOOL))
    with builder:

        def body(i, h, unused):
            scale = emit(builder, "multiply", emit(builder, "exp", const(builder, np.float32(0.5))), const(builder, 1))
            h_next = emit(builder, "tanh", emit(builder, "multiply", h, scale))
            h_again = emit(builder, "tanh", emit(builder, "multiply", h, scale))
            branch = emit_cond(
                builder,
                p,
                lambda: [emit(builder, "power", h_next, const(builder, 2))],
                lambda: [emit(builder, "add", h_again, const(builder, 0))],
            )
            emit_print(builder, i)
            return [
                emit(builder, "add", i, const(builder, 1)),
                branch.result,
                emit(builder, "add", unused, const(builder, 1.0)),
            ]

        inits = [const(builder, np.int64(0)), x, const(builder, np.float32(0))]
        loop = emit_while(builder, inits, ["i", "h", "unused"], lambda i, h, u: emit(builder, "less", i, n), body)
        return builder.finish([loop.results[1]])


def loop_and_branch_reference(x, n, p):
    for _ in range(n):
        h = np.tanh(x * np.exp(np.float32(0.5)))
        x = h**2 if p else h
    return x


def test_pipeline_inside_cond_and_while_regions_keeps_results(capsys):
    x = np.array([0.1, -0.7, 2.0], np.float32)
    graph = loop_and_branch_graph()
    before_ops = sum(1 for _ in graph.walk())
    optimize(graph, passes=default_passes()[: len(CLEANUPS)])
    names = [op.name for op in graph.walk()]
    assert sum(1 for _ in graph.walk()) < before_ops
    assert "power" not in names and names.count("tanh") == 1
    assert len(graph.body.ops[-2].results) == 2  # the unused carried value is gone
    for n, p in [(0, True), (3, True), (3, False)]:
        expected = loop_and_branch_reference(x, n, p)
        reference = execute(loop_and_branch_graph(), x, np.array(n), np.array(p))
        assert_same_results(reference, [expected])
        capsys.readouterr()
        assert_same_results(execute(graph, x, np.array(n), np.array(p)), [expected])
        assert capsys.readouterr().out == "".join(f"{i}\n" for i in range(n))


def recurrent(x, n):
    i = 0
    steps = 0
    while i < n:
        x = np.tanh(W.T @ (W @ x)) * 1 + x**2 * 0.1
        steps = steps + 1
        i = i + 1
    if x.sum() > 0:
        y = x**2
    else:
        y = -x
    return y


def test_converted_loops_and_branches_are_optimized_and_match_eager():
    converted = dy2st.to_static(recurrent)
    x = np.array([0.3, -0.2, 0.1, 0.9], np.float32)
    for n in (0, 1, 3, 0, 5):
        assert_same_results([converted(x, np.array(n))], [recurrent(x, np.array(n))])
        assert_same_results([converted(-x, np.array(n))], [recurrent(-x, np.array(n))])
    assert converted.num_graphs == 1
    graph = converted.graph(x, np.array(1))
    (loop,) = [op for op in graph.body.ops if op.name == "while_loop"]
    body_names = [op.name for op in loop.regions[1].block.walk()]
    assert "transpose" not in body_names  # W.T is hoisted out of the loop
    assert len(loop.results) == 2  # `steps` is never read: it no longer rides along
    assert "power" not in [op.name for op in graph.walk()]
