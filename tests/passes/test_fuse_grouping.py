"""Fusion grouping gives the groups of its plain definition, on random blocks.

``form_groups`` keeps, per group, what merging asks (outside users, last position, reductions
that drop the row axis) so that a long block groups in linear time. ``reference_groups`` below
is the definition it must agree with, written the direct way: every merge re-reads every member.
Random blocks mix elementwise ops over broadcasting shapes (square, so that a row reduction
without ``keepdims`` can meet an op of its group's shape), row reductions with and without
``keepdims``, reductions over other axes and transposes (which do not fuse, and lie on paths
from one group to another), prints (side effects) and scalar constants; the fused graph must also compute what the unfused one does.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pass_harness import F32, const, emit, emit_print, execute, new_builder, run_pass, tensor_type

from dy2st.ir.core import Op
from dy2st.passes.dce import DeadCodeElimination, has_side_effects
from dy2st.passes.fuse import (
    BlockIndex,
    FuseElementwise,
    form_groups,
    is_elementwise,
    is_row_reduction,
    iteration_shape,
)

UNARY = ["tanh", "negative", "exp"]
BINARY = ["add", "multiply", "maximum"]
KINDS = UNARY + BINARY + ["row_sum", "row_sum_keepdims", "row_max_keepdims", "column_sum", "transpose"]
KINDS += ["print", "scalar"]

step = st.tuples(st.sampled_from(KINDS), st.integers(0, 1000), st.integers(0, 1000))


# --- the definition ----------------------------------------------------------------------------
def _merged_members(a: tuple, b: tuple) -> tuple | None:
    (members_a, shape_a, rows_a), (members_b, shape_b, rows_b) = a, b
    if shape_a == shape_b:
        shape = shape_a
    elif rows_a and not rows_b and shape_b == shape_a[:-1] + (1,):
        shape = shape_a
    elif rows_b and not rows_a and shape_a == shape_b[:-1] + (1,):
        shape = shape_b
    else:
        return None
    members = members_a | members_b
    for op in members:
        for v in op.operands:
            if v.op in members and is_row_reduction(v.op) and not v.op.attrs.get("keepdims"):
                return None
    return members, shape, rows_a or rows_b


def _convex(members: set[Op], index: BlockIndex) -> bool:
    last = max(index.position[m] for m in members)
    frontier = [u for m in members for r in m.results for u in index.consumers.get(r, ()) if u not in members]
    visited: set[Op] = set()
    while frontier:
        user = frontier.pop()
        if user in visited or index.position[user] > last:
            continue
        if user in members or has_side_effects(user):
            return False
        visited.add(user)
        for r in user.results:
            frontier.extend(index.consumers.get(r, ()))
    return True


def reference_groups(block, index: BlockIndex) -> list[set[Op]]:
    """Greedy grouping in program order, each candidate union checked from all its members."""
    group_of: dict[Op, tuple] = {}
    for op in block.ops:
        if not (is_elementwise(op) or is_row_reduction(op)):
            continue
        group = group_of[op] = ({op}, iteration_shape(op), is_row_reduction(op))
        producers: list[tuple] = []
        for v in reversed(op.operands):
            if v.op in group_of and not any(group_of[v.op] is g for g in producers):
                producers.append(group_of[v.op])
        for producer in producers:
            candidate = _merged_members(group, producer)
            if candidate is not None and _convex(candidate[0], index):
                group = candidate
                for member in group[0]:
                    group_of[member] = group
    groups = {id(g): g[0] for g in group_of.values() if len(g[0]) >= 2}
    return sorted(groups.values(), key=lambda g: min(index.position[m] for m in g))


# --- random blocks -----------------------------------------------------------------------------
def _broadcasts(a, b) -> bool:
    try:
        np.broadcast_shapes(a.type.shape, b.type.shape)
    except ValueError:
        return False
    return True


def build(steps):
    builder, (x, r, c) = new_builder(
        "random", x=tensor_type(F32, 4, 4), r=tensor_type(F32, 4, 1), c=tensor_type(F32, 4)
    )
    with builder:
        pool = [x, r, c]
        for kind, a, b in steps:
            first = pool[a % len(pool)]
            if kind in UNARY:
                pool.append(emit(builder, kind, first))
            elif kind in BINARY:
                partners = [v for v in pool if _broadcasts(first, v)]
                pool.append(emit(builder, kind, first, partners[b % len(partners)]))
            elif kind == "scalar":
                pool.append(emit(builder, "multiply", first, const(builder, 0.5)))
            elif kind == "print":
                emit_print(builder, first)
            elif kind == "transpose":  # not fusible, and of its operand's shape: paths between groups
                pool.append(emit(builder, "transpose", first, axes=tuple(reversed(range(first.type.ndim)))))
            elif first.type.ndim == 2:
                name = "max" if kind == "row_max_keepdims" else "sum"
                axis = (0,) if kind == "column_sum" else (1,)
                pool.append(emit(builder, name, first, axis=axis, keepdims=kind.endswith("keepdims")))
        return builder.finish(pool[-3:])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=30))
def test_grouping_agrees_with_its_definition(steps):
    block = build(steps).body
    index = BlockIndex(block)
    groups = form_groups(block, index)
    expected = reference_groups(block, index)
    assert [sorted(index.position[m] for m in g) for g in groups] == [
        sorted(index.position[m] for m in g) for g in expected
    ]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=30))
def test_fused_blocks_compute_what_the_unfused_ones_do(steps):
    x = np.linspace(-1.0, 1.0, 16, dtype=np.float32).reshape(4, 4)
    r = np.array([[0.5], [-0.25], [2.0], [0.0]], np.float32)
    c = np.array([1.5, -1.0, 0.25, 3.0], np.float32)
    with np.errstate(all="ignore"):
        expected = execute(build(steps), x, r, c)
        graph = build(steps)
        run_pass(DeadCodeElimination, graph)  # as in the pipeline: fusion never sees dead ops
        run_pass(FuseElementwise, graph)
        actual = execute(graph, x, r, c)
    for a, e in zip(actual, expected):
        assert a.dtype == e.dtype and a.shape == e.shape
        assert np.array_equal(a, e, equal_nan=True)


def test_a_larger_group_never_takes_in_the_reduction_whose_dropped_axis_it_reads():
    # add(s, b): b's group {a, b} joins first (the most recent operand), then the row sum s,
    # a group smaller than the one reading its result, must stay out: its row axis is gone.
    builder, (x,) = new_builder("dropped", x=tensor_type(F32, 4, 4))
    with builder:
        a = emit(builder, "tanh", x)
        b = emit(builder, "exp", a)
        s = emit(builder, "sum", x, axis=(1,), keepdims=False)
        total = emit(builder, "add", s, b)
        graph = builder.finish([total])
    index = BlockIndex(graph.body)
    groups = form_groups(graph.body, index)
    assert groups == reference_groups(graph.body, index) == [{a.op, b.op, total.op}]


def test_a_producer_that_reaches_the_op_through_an_outside_op_stays_apart():
    # add(q, p): p's group is tried first (the last operand) but the path p -> transpose -> exp
    # -> add would leave the group and come back; q's group then joins.
    builder, (x,) = new_builder("around", x=tensor_type(F32, 4, 4))
    with builder:
        p = emit(builder, "tanh", x)
        q = emit(builder, "exp", emit(builder, "transpose", p, axes=(1, 0)))
        total = emit(builder, "add", q, p)
        graph = builder.finish([total])
    index = BlockIndex(graph.body)
    groups = form_groups(graph.body, index)
    assert groups == reference_groups(graph.body, index) == [{q.op, total.op}]
