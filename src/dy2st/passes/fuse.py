"""Elementwise fusion: replace each group of elementwise ops by one ``fused`` op with a region.

A group is a set of elementwise ops of one block (ufuncs, and ``select`` ops: ``np.where``) that
all produce the same shape (the group's iteration space); it grows along data edges, so chains and
DAGs (diamonds, shared inputs) fuse. Operands of other shapes stay outside as inputs the kernel
broadcasts, and scalar ``const`` ops are copied into the region. Before::

    %0 = multiply %x, 2.0 : f32[1000]
    %1 = tanh %0 : f32[1000]
    %2 = add %1, %x : f32[1000]
    return %2

After::

    %2 = fused %x {name='fused_0'} : f32[1000]
    {
      ^args(%x_1: f32[1000])
      %0 = multiply %x_1, 2.0 : f32[1000]
      %1 = tanh %0 : f32[1000]
      %2_1 = add %1, %x_1 : f32[1000]
      yield %2_1
    }
    return %2

Reductions over the last axis (``sum/mean/max/min`` of floats) may join a group too, so softmax
and layernorm become one kernel; its tiles then hold whole rows, and ops on the reduced rows
(shape ``[..., 1]``, like ``var + eps``) join as well. A reduction without ``keepdims`` can only end
a group. ``FuseElementwise(reductions=False)`` turns this off. Measured on 4096x1024 float32
(medians, loaded 2-core machine): layernorm 43-50 ms with rows fused, 53-57 ms elementwise-only,
78 ms eager; softmax 36-39 ms vs 37-41 ms vs 44 ms; at 256 rows all three are within noise.

Rules: every group value used outside the group becomes a result of the fused op; a group must be
convex (no path leaves the group and re-enters it, or the fused op would depend on itself); ops
that consume group values but sit before the group's last op move after the fused op, unless they
have side effects (then the merge is refused, so prints and asserts keep their order). Groups form
inside ``cond``/``while_loop`` regions too, never across a region boundary. Absorbed ops keep their
``loc`` inside the region, so a run-time error names the user's line.
"""

from __future__ import annotations

import bisect
import math
import operator
from typing import Any

import numpy as np

from dy2st.ir.core import CONST, ERRSTATE_ATTR, YIELD, Block, Op, Region, Value
from dy2st.ir.opdefs import get_op
from dy2st.ir.symbolic import size_holds
from dy2st.ops.fused import FUSED
from dy2st.passes.base import Pass
from dy2st.passes.dce import has_side_effects


class FuseElementwise(Pass):
    """Fuse groups of two or more elementwise ops (and last-axis reductions) into ``fused`` ops.

    Args:
        reductions: let ``sum/mean/max/min`` over the last axis join groups (softmax, layernorm).
    """

    name = "fuse-elementwise"

    def __init__(self, reductions: bool = True):
        self.reductions = reductions

    def run(self, graph) -> bool:
        counter = [0]
        return fuse_block(graph.body, counter, self.reductions)


def is_elementwise(op: Op) -> bool:
    """An elementwise op with one result that the fused kernel can write into a tile: a NumPy
    ufunc (called with ``out=``) or a ``select`` (``np.where``) on a boolean condition, as
    comparisons make it (the kernel uses it as a mask; another dtype would need a conversion)."""
    if op.regions or len(op.results) != 1 or op.name == CONST or ERRSTATE_ATTR in op.attrs:
        return False  # an op under `np.errstate` runs alone, inside its `with` (no group kernel has one)
    opdef = get_op(op.name)
    if not opdef.elementwise:
        return False
    if opdef.select:
        return op.operands[0].type.dtype == np.bool_
    return opdef.ufunc is not None and opdef.ufunc.nout == 1


def is_row_reduction(op: Op) -> bool:
    """``sum/mean/max/min`` over the last axis of a float array, keeping its dtype (so the kernel's
    ``out=`` buffer has the dtype eager NumPy returns and the same code path runs)."""
    if get_op(op.name).row_reduction is None or len(op.operands) != 1 or ERRSTATE_ATTR in op.attrs:
        return False
    source = op.operands[0].type
    return (
        source.ndim >= 1
        and size_holds(source.shape[-1], operator.gt, 0)
        and op.attrs.get("axis") == (source.ndim - 1,)
        and source.dtype.kind == "f"
        and op.results[0].type.dtype == source.dtype
    )


def iteration_shape(op: Op) -> tuple[Any, ...]:
    """The shape an op iterates over: a reduction's input, an elementwise op's result."""
    return op.operands[0].type.shape if is_row_reduction(op) else op.results[0].type.shape


class Group:
    """A set of ops to fuse, with the shape the kernel tiles and whether tiles keep whole rows.

    Merging asks three questions of two groups; to answer them without reading every member
    again (which made grouping quadratic in the size of a group), each group also keeps the
    positions of its first and last ops, the ops outside it that use its results and that
    produce its operands (with the position of the latest one: an upper bound, as producers
    that join the group are not subtracted), the position of the first op with side effects
    that depends on it, and its reductions that drop the row axis. A merge folds the smaller
    group into the larger one.
    """

    def __init__(self, op: Op, index: BlockIndex, side_effect_horizon: dict[Op, float]):
        self.members = {op}
        self.shape = iteration_shape(op)
        self.whole_rows = is_row_reduction(op)
        self.first = self.last = index.position[op]
        self.outside_users = {user for r in op.results for user in index.consumers.get(r, ())}
        # Producers in this block only: a value from an enclosing block lies on no path in it.
        self.outside_producers = {v.op for v in op.operands if v.op in index.position}
        self.latest_producer = max((index.position[p] for p in self.outside_producers), default=-1.0)
        self.side_effect_horizon = side_effect_horizon[op]
        self.dropping_rows = {op} if self.whole_rows and not op.attrs.get("keepdims") else set()

    def merged_shape(self, other: Group) -> tuple[tuple[int, ...], bool] | None:
        """The shape and ``whole_rows`` of the union, when one kernel can run both: same shape,
        or one side holds per-row values (shape ``[..., 1]``) of a group that reduces rows."""
        if self.shape == other.shape:
            shape = self.shape
        elif self.whole_rows and not other.whole_rows and other.shape == _row_shape(self.shape):
            shape = self.shape
        elif other.whole_rows and not self.whole_rows and self.shape == _row_shape(other.shape):
            shape = other.shape
        else:
            return None
        return shape, self.whole_rows or other.whole_rows

    def absorb(self, other: Group, shape: tuple[tuple[int, ...], bool], group_of: dict[Op, Group]) -> None:
        """Take ``other``'s members (``shape`` from ``merged_shape``) and point them at ``self``."""
        self.shape, self.whole_rows = shape
        self.first, self.last = min(self.first, other.first), max(self.last, other.last)
        self.outside_users.update(user for user in other.outside_users if user not in self.members)
        self.outside_users.difference_update(other.members)
        self.outside_producers.update(p for p in other.outside_producers if p not in self.members)
        self.outside_producers.difference_update(other.members)
        self.latest_producer = max(self.latest_producer, other.latest_producer)
        self.side_effect_horizon = min(self.side_effect_horizon, other.side_effect_horizon)
        self.members |= other.members
        self.dropping_rows |= other.dropping_rows
        for member in other.members:
            group_of[member] = self


def _row_shape(shape: tuple[Any, ...]) -> tuple[Any, ...] | None:
    return shape[:-1] + (1,) if shape else None


def _uses_dropped_axis(a: Group, b: Group, index: BlockIndex) -> bool:
    """A reduction without ``keepdims`` drops the row axis: its result can only leave the group.
    Neither group uses such a result of its own, so only uses from one group into the other count."""
    small, large = (a, b) if len(a.members) <= len(b.members) else (b, a)
    for op in small.members:
        if any(v.op in large.dropping_rows for v in op.operands):
            return True
    return any(
        user in large.members for op in small.dropping_rows for r in op.results for user in index.consumers.get(r, ())
    )


def is_absorbable_const(value: Value) -> bool:
    """Scalar constants are cheap to copy into a region and keep their literal (weak) semantics."""
    op = value.op
    return op is not None and op.name == CONST and value.type.shape == ()


def fuse_block(block: Block, counter: list[int], reductions: bool = True) -> bool:
    """Fuse groups in ``block`` and, first, in the regions nested in it. Returns whether it changed."""
    changed = False
    for op in block.ops:
        for region in op.regions:
            changed |= fuse_block(region.block, counter, reductions)
    index = BlockIndex(block)
    for members in form_groups(block, index, reductions):
        # An earlier contraction can make a later group non-convex (two groups feeding each
        # other), so each group is checked again against the block as it is now.
        if is_convex(members, index):
            contract(block, members, f"fused_{counter[0]}", index)
            counter[0] += 1
            changed = True
    return changed


def consumer_map(block: Block) -> dict[Value, dict[Op, None]]:
    """For each value, the top-level ops of ``block`` that use it (uses in nested regions count),
    in program order: an ordered set, so that a contraction removes its members from it in time
    proportional to them, not to every user of a value that many groups read."""
    consumers: dict[Value, dict[Op, None]] = {}
    for op in block.ops:
        for inner in op.walk():
            for v in inner.operands:
                consumers.setdefault(v, {})[op] = None
    return consumers


class BlockIndex:
    """Program-order keys and value consumers of one block's ops, kept up to date as groups are
    contracted (rebuilding them for every group made the pass quadratic on unrolled loops).

    ``position`` orders ops but is not their list index: a contraction gives the fused op its
    last member's key and the ops it moves keys between that and the next op's. The block's op
    list stays sorted by it, so an op is found by bisection rather than by a scan.
    """

    def __init__(self, block: Block):
        self.block = block
        self.consumers = consumer_map(block)
        self.position: dict[Op, float] = {op: float(i) for i, op in enumerate(block.ops)}
        self._side_effects: dict[Op, bool] = {}

    def has_side_effects(self, op: Op) -> bool:
        known = self._side_effects.get(op)
        if known is None:
            known = self._side_effects[op] = has_side_effects(op)
        return known

    def users_outside(self, value: Value, members: set[Op]) -> list[Op]:
        return [u for u in self.consumers.get(value, ()) if u not in members]

    def index_in_block(self, op: Op) -> int:
        """Where ``op`` is in the block's op list."""
        ops, key = self.block.ops, self.position[op]
        i = bisect.bisect_left(ops, key, key=self.position.__getitem__)
        while i < len(ops) and ops[i] is not op and self.position[ops[i]] == key:
            i += 1  # keys that rounding made equal: the op is among them
        return i if i < len(ops) and ops[i] is op else ops.index(op)


def form_groups(block: Block, index: BlockIndex, reductions: bool = True) -> list[set[Op]]:
    """Greedy grouping in program order: each fusible op joins the groups of its producers."""
    group_of: dict[Op, Group] = {}
    horizon = side_effect_horizon(block, index)
    for op in block.ops:
        if not (is_elementwise(op) or reductions and is_row_reduction(op)):
            continue
        group = group_of[op] = Group(op, index, horizon)
        for producer_group in _producer_groups(op, group_of):
            shape = group.merged_shape(producer_group)
            if shape is None or _uses_dropped_axis(group, producer_group, index):
                continue
            if not _merge_is_convex(group, producer_group, index):
                continue
            if len(group.members) < len(producer_group.members):
                group, producer_group = producer_group, group
            group.absorb(producer_group, shape, group_of)
    groups: list[set[Op]] = []
    seen: set[int] = set()
    for group in group_of.values():
        if len(group.members) >= 2 and id(group) not in seen:
            seen.add(id(group))
            groups.append(group.members)
    groups.sort(key=lambda g: min(index.position[m] for m in g))
    return groups


def _producer_groups(op: Op, group_of: dict[Op, Group]) -> list[Group]:
    """Distinct groups producing ``op``'s operands, the most recent producer first."""
    found: list[Group] = []
    for v in reversed(op.operands):
        producer = v.op
        if producer is None or producer not in group_of:
            continue
        g = group_of[producer]
        if not any(g is f for f in found):
            found.append(g)
    return found


def is_convex(members: set[Op], index: BlockIndex) -> bool:
    """No path leaves ``members`` and comes back, and no side-effecting op would have to move.

    Walks forward from the group's results through outside consumers; reaching a member again
    means the fused op would depend on itself. Outside consumers placed before the group's last
    member will move after the fused op, which is only safe for ops without side effects.
    """
    last = max(index.position[m] for m in members)
    # Start from the users of the members' results; any member reached from there re-enters.
    frontier = [u for m in members for r in m.results for u in index.consumers.get(r, ()) if u not in members]
    return not _reenters(frontier, (members,), last, index)


def side_effect_horizon(block: Block, index: BlockIndex) -> dict[Op, float]:
    """For each op, the position of the first op with side effects that depends on it, directly
    or through others (infinity if none): one pass, last op first."""
    horizon: dict[Op, float] = {}
    for op in reversed(block.ops):
        first = math.inf
        for r in op.results:
            for user in index.consumers.get(r, ()):
                first = min(first, horizon[user], index.position[user] if index.has_side_effects(user) else math.inf)
        horizon[op] = first
    return horizon


def _merge_is_convex(a: Group, b: Group, index: BlockIndex) -> bool:
    """``is_convex`` of the union of two groups, from what each group keeps.

    Fusible ops have no side effects, so one that depends on a member lies outside the union,
    and a path to it leaves the union after its last member on that path: it moves after the
    fused op if it comes before the union's last op. Each group is convex alone, so a path that
    re-enters the union goes from one group to the other through ops outside both.
    """
    if min(a.side_effect_horizon, b.side_effect_horizon) <= max(a.last, b.last):
        return False
    return not (_reaches_through_outside(a, b, index) or _reaches_through_outside(b, a, index))


def _reaches_through_outside(source: Group, target: Group, index: BlockIndex) -> bool:
    """Does a path lead from ``source`` through ops outside both groups into ``target``?

    It enters ``target`` from one of its outside producers placed after ``source``'s first op,
    so the walk starts only if there is one, and goes no further than the latest of them.
    """
    position = index.position
    if target.latest_producer <= source.first:
        return False
    entries = {p for p in target.outside_producers if p not in source.members and position[p] > source.first}
    if not entries:
        return False
    horizon = max(position[p] for p in entries)
    frontier = [u for u in source.outside_users if u not in target.members]
    visited: set[Op] = set()
    while frontier:
        user = frontier.pop()
        if user in visited or position[user] > horizon:
            continue
        if user in entries:
            return True
        visited.add(user)
        for r in user.results:
            frontier.extend(index.consumers.get(r, ()))
    return False


def _reenters(frontier: list[Op], members: tuple[set[Op], ...], last: float, index: BlockIndex) -> bool:
    """Does a walk from ``frontier`` through consumers placed up to ``last`` reach ``members``
    or an op with side effects (which could not move after the fused op)?"""
    position, consumers = index.position, index.consumers
    visited: set[Op] = set()
    while frontier:
        user = frontier.pop()
        if user in visited or position[user] > last:
            continue
        if any(user in group for group in members):
            return True
        visited.add(user)
        if index.has_side_effects(user):
            return True
        for r in user.results:
            frontier.extend(consumers.get(r, ()))
    return False


def contract(block: Block, members: set[Op], name: str, index: BlockIndex | None = None) -> Op:
    """Replace ``members`` in ``block`` by one fused op; returns it. Keeps ``index`` up to date."""
    index = index or BlockIndex(block)
    ordered = sorted(members, key=index.position.__getitem__)
    produced = {r for op in ordered for r in op.results}
    outputs = [r for op in ordered for r in op.results if index.users_outside(r, members)]
    inputs = _external_inputs(ordered, produced)
    # Weak inputs (loop-carried Python numbers) stay weak: they promote like Python scalars.
    body = Block([v.type for v in inputs], [v.name_hint for v in inputs])
    mapping: dict[Value, Value] = dict(zip(inputs, body.args))
    absorbed: list[Value] = []
    for op in ordered:
        for v in op.operands:
            if v not in mapping and is_absorbable_const(v):
                const = v.op
                assert const is not None  # an absorbable constant is an op's result
                clone = body.append(Op(CONST, [], [v.type], dict(const.attrs), loc=const.loc))
                clone.results[0].name_hint = v.name_hint
                mapping[v] = clone.results[0]
                absorbed.append(v)
        clone = Op(op.name, [mapping[v] for v in op.operands], [r.type for r in op.results], dict(op.attrs), loc=op.loc)
        for original, copied in zip(op.results, clone.results):
            copied.name_hint = original.name_hint
            mapping[original] = copied
        body.append(clone)
    body.append(Op(YIELD, [mapping[v] for v in outputs], [], loc=ordered[-1].loc))
    fused = Op(FUSED, inputs, [v.type for v in outputs], {"name": name}, [Region(body)], loc=ordered[-1].loc)
    for original, result in zip(outputs, fused.results):
        result.name_hint = original.name_hint
    _rewire(members, fused, outputs, produced, index)
    unused = [const for v in absorbed if not index.consumers.get(v) and (const := v.op) is not None]
    dead_consts = {const for const in unused if const.parent is block}
    _splice(block, ordered, fused, dead_consts, index)
    return fused


def _external_inputs(ordered: list[Op], produced: set[Value]) -> list[Value]:
    inputs: dict[Value, None] = {}
    for op in ordered:
        for v in op.operands:
            if v not in produced and not is_absorbable_const(v):
                inputs.setdefault(v)
    return list(inputs)


def _splice(block: Block, ordered: list[Op], fused: Op, dead_consts: set[Op], index: BlockIndex) -> None:
    """Put ``fused`` where the group's last op was and drop the constants only the group used.

    Ops that depend on the group and sat before that point move right after it (``is_convex``
    guaranteed they do not feed the group).
    """
    members = set(ordered)
    ops = block.ops
    first, last = index.index_in_block(ordered[0]), index.index_in_block(ordered[-1])
    last_key = index.position[ordered[-1]]
    next_key = index.position[ops[last + 1]] if last + 1 < len(ops) else last_key + 1.0
    # Outside uses already point at the fused op's results (``_rewire`` ran first).
    tainted: set[Value] = set(fused.results)
    stay, move = [], []
    for op in ops[first:last]:
        if op in members or op in dead_consts:
            continue
        if any(v in tainted for inner in op.walk() for v in inner.operands):
            move.append(op)
            tainted.update(op.results)
        else:
            stay.append(op)
    ops[first : last + 1] = stay + [fused] + move
    fused.parent = block
    index.position[fused] = last_key
    keys = [last_key + (next_key - last_key) * k / (len(move) + 1) for k in range(1, len(move) + 1)]
    if all(a < b for a, b in zip([last_key, *keys], [*keys, next_key])):
        index.position.update(zip(move, keys))
    else:  # the interval was split so often that its keys no longer differ: number the ops anew
        index.position.update((op, float(i)) for i, op in enumerate(ops))
    for op in dead_consts:
        if op in index.position and index.position[op] < index.position[ordered[0]]:
            del ops[index.index_in_block(op)]
    for op in members | dead_consts:
        index.position.pop(op, None)
    for op in dead_consts:
        index.consumers.pop(op.results[0], None)


def _rewire(members: set[Op], fused: Op, outputs: list[Value], produced: set[Value], index: BlockIndex) -> None:
    """Point the outside uses of the group's outputs at the fused op's results, and update the
    consumer lists: members no longer consume anything; the fused op consumes its inputs."""
    for original, result in zip(outputs, fused.results):
        users = index.users_outside(original, members)
        for user in users:
            for inner in user.walk():
                inner.operands = [result if v is original else v for v in inner.operands]
        index.consumers[result] = dict.fromkeys(users)
    for value in produced:
        index.consumers.pop(value, None)
    for member in members:
        for value in member.operands:
            readers = index.consumers.get(value)
            if readers is not None:
                readers.pop(member, None)
    for value in fused.operands:
        index.consumers[value][fused] = None
