"""Memory planning: results are written with ``out=`` into buffers whose previous values are dead.

Liveness runs over the executor's schedule: program order, each op numbered in a pre-order walk so
the ops of a region get the numbers between their parent op's number and its end. A value used
inside a region is live across the whole ``cond``/``while_loop`` op (the loop may run the use again);
a value a loop body yields lives until the loop ends (the next iteration reads it). Views
(``OpDef.view``), and results of ops not known to return fresh arrays, may share their operands'
buffers, so a buffer lives as long as its longest-lived view.

Every op with a NumPy ``out=`` form (single-result ufuncs, fused ops, matmul, float reductions,
copies) gets a buffer *slot*; slots are reused once their occupant is dead (same byte size and
dtype), and an elementwise ufunc writes in place into an input that dies at that op. The plan is
recorded as op attributes the codegen reads and the printer shows::

    %h = matmul %x, %W1 {out_buffer=0} : f32[4096,1024]
    %h_1 = add %h, %b1 {in_place=0, out_buffer=0} : f32[4096,1024]
    %h_2 = matmul %h_1, %W2 {out_buffer=1} : f32[4096,1024]

Slots persist across calls of the same graph (steady-state calls allocate nothing for them), except
slots that hold a graph output at the end: those are allocated once per call, so the caller owns
every array it gets back (an output alone in its slot is simply left to NumPy). Inputs, captures,
constants and anything that may alias them are never planned (they are not results of
out-capable ops), and values that escape through a ``yield``, a loop's initial values or a
view that escapes are left to NumPy, which allocates them afresh. The one exception is a value a
``cond`` branch yields when the cond result stays inside the graph (not an output, not carried by
a loop, not viewed): the cond result takes over its buffer, which then lives until the result's
last use, and the branches share one slot since only one runs.

Buffers are C-ordered, while NumPy gives a result the memory order of its operands (``x.T * 2.0``
is Fortran-ordered), and a float reduction rounds by the order it reads memory in. So values a
reduction reads, and the values their order derives from, are left to NumPy
(``eager_ordered_values``; a matmul result is C-ordered either way and keeps its buffer), a fused op
among them is marked ``eager_layout`` (its kernel then gives NumPy's order), and a reduction is
planned only when its result has at most one axis longer than 1. Values NumPy lays out C-ordered
whatever the caller passes (elementwise work on matmul results and rows: ``c_ordered_values``)
need no such care, and are planned unless that raises the planned peak.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from dy2st.ir.core import ANNOTATION_ATTRS, COND, WHILE_LOOP, WRITES_UPDATE, YIELD, Block, Graph, Op, Value
from dy2st.ir.opcodes import CONST
from dy2st.ir.opdefs import get_op, in_place_results
from dy2st.ir.symbolic import has_symbolic, hint_of, is_data_dependent
from dy2st.ops.shape import BROADCAST_TO
from dy2st.passes.alias import may_alias_inputs
from dy2st.passes.base import Pass

# The op attributes this pass writes; kernels never see them.
PLAN_ATTRS = ("out_buffer", "in_place", "eager_layout")
ANNOTATION_ATTRS.update(PLAN_ATTRS)


# --- what the backend tells the planner ---------------------------------------------------------
class MemoryTarget:
    """What the planner needs to know about the backend that runs the plan.

    The default answers come from the op definitions' traits (``ufunc``, ``out_kernel``,
    ``in_place_safe``, ``returns_fresh``, ``region_kernel``); a backend subclasses it where it
    runs an op differently (the NumPy backend runs small fused groups op by op, for one).
    """

    def accepts_out(self, op: Op) -> bool:
        """Does this op's kernel have an ``out=`` form that gives bit-identical results?"""
        opdef = get_op(op.name)
        if opdef.ufunc is not None:
            return opdef.ufunc.nout == 1
        if opdef.region_kernel:
            return not self.runs_unfused(op)
        if opdef.out_kernel is None:
            return False
        if opdef.reduction:
            # Integer sums promote their accumulator; only same-dtype float reductions are planned.
            # And only with at most one axis left (``has_memory_order``): NumPy orders the loops of
            # a reduction by the strides of its output too, so a C-ordered ``out=`` can change the
            # summation order (``x.sum(axis=1)`` of a Fortran-ordered 3-d ``x``).
            source = op.operands[0].type.dtype
            result = op.results[0]
            return source.kind in "fc" and source == result.type.dtype and not has_memory_order(result)
        return True

    def runs_unfused(self, op: Op) -> bool:
        """Does the backend run this op's region op by op rather than as one kernel?"""
        return False

    def in_place_safe(self, op: Op) -> bool:
        """May the result overwrite an input of the same shape? True for plain elementwise ufuncs,
        which read each element before writing it; never for matmul or reductions."""
        opdef = get_op(op.name)
        return (opdef.ufunc is not None and opdef.ufunc.nout == 1) or opdef.in_place_safe

    def runs_in_place(self, op: Op) -> bool:
        """Can the backend run this functional update in its operand's own buffer
        (``OpDef.in_place_kernel``)? The ``in-place-updates`` pass asks."""
        return get_op(op.name).in_place_kernel is not None

    def returns_fresh(self, op: Op) -> bool:
        """Does the kernel always return a new array? The result of any other op that is not a
        ``view`` may share memory with its operands (``np.diag`` of a matrix is a view, for one),
        so the planner treats it as a view of all of them."""
        opdef = get_op(op.name)
        return opdef.ufunc is not None or opdef.region_kernel or opdef.returns_fresh


DEFAULT_TARGET = MemoryTarget()


def _accepts_out(op: Op, target: MemoryTarget) -> bool:
    """Is ``op`` a candidate for a planned buffer: one non-0-d result, no view, no effects, and an
    ``out=`` form on the target?"""
    opdef = get_op(op.name)
    if len(op.results) != 1 or op.regions and not opdef.region_kernel:
        return False
    result = op.results[0].type
    if result.ndim == 0 or result.weak:
        return False  # 0-d results are NumPy scalars in eager code; keep them that way
    if opdef.view or opdef.side_effect or in_place_results(op) or op.attrs.get(WRITES_UPDATE):
        return False  # a view, or a result written into an operand or an update's array
    return target.accepts_out(op)


def _is_control_flow(op: Op) -> bool:
    return get_op(op.name).control_flow


# --- the schedule and liveness -----------------------------------------------------------------
@dataclass
class Schedule:
    """Ops in executor order (pre-order), with each op's number and the last number of its span."""

    ops: list[Op] = field(default_factory=list)
    index: dict[Op, int] = field(default_factory=dict)
    end: dict[Op, int] = field(default_factory=dict)


def schedule(graph: Graph) -> Schedule:
    """Number every op in program order; a control-flow op's span covers all ops of its regions.
    Other ops with a region (fused groups) run as one kernel: their insides are not scheduled."""
    sched = Schedule()

    def visit(block: Block) -> None:
        for op in block.ops:
            sched.index[op] = len(sched.ops)
            sched.ops.append(op)
            if _is_control_flow(op):
                for region in op.regions:
                    visit(region.block)
            sched.end[op] = len(sched.ops) - 1

    visit(graph.body)
    return sched


def _defining_block(value: Value) -> Block:
    block = value.owner.parent if isinstance(value.owner, Op) else value.owner
    assert isinstance(block, Block), "a value of the schedule is defined in a block"
    return block


def _use_position(sched: Schedule, value: Value, user: Op) -> int:
    """Where a use counts: the user itself, or the whole span of the region op that contains it
    in the value's own block (a use inside a loop body repeats until the loop ends)."""
    home = _defining_block(value)
    op = user
    while op.parent is not home:
        parent_region = op.parent.parent if op.parent is not None else None
        if parent_region is None or parent_region.parent is None:
            return sched.end[user]  # defensive: use outside the defining scope
        op = parent_region.parent
    return sched.end[op] if op.regions else sched.index[op]


def _definitions(graph: Graph, sched: Schedule) -> dict[Value, list[int]]:
    """Each value's interval at its definition: its op's position (block arguments of a region
    op: the op's), -1 for the graph's inputs and captures."""
    intervals: dict[Value, list[int]] = {}
    for op in sched.ops:
        for value in op.results:
            intervals[value] = [sched.index[op], sched.index[op]]
        for region in op.regions if _is_control_flow(op) else ():
            for value in region.block.args:
                intervals[value] = [sched.index[op], sched.index[op]]
    for value in graph.body.args:
        intervals[value] = [-1, -1]
    return intervals


def live_intervals(graph: Graph, sched: Schedule) -> dict[Value, list[int]]:
    """``[first, last]`` schedule positions of every value (closed: an op's operands and results
    are live together). Values forwarded through region ops live as long as what they become."""
    intervals = _definitions(graph, sched)
    for op in sched.ops:
        for value in op.operands:
            span = intervals[value]
            span[1] = max(span[1], _use_position(sched, value, op))
    # A value a loop body yields is read by the next iteration: it lives until the loop ends. From
    # there on the region op's results carry the buffer (see ``region_result_intervals``).
    for op in sched.ops:
        if op.name == WHILE_LOOP:
            for value in op.regions[1].block.ops[-1].operands:
                intervals[value][1] = max(intervals[value][1], sched.end[op])
    return intervals


def region_result_intervals(sched: Schedule, intervals: dict[Value, list[int]]) -> dict[Value, list[int]]:
    """Intervals of ``cond``/``while_loop`` results as buffers of their own, from the end of the op
    (where the yielded value they take over dies) to their last use; only one branch runs, so
    the branches' values never add up."""
    spans = {}
    for op in sched.ops:
        if _is_control_flow(op):
            for result in op.results:
                first = sched.end[op] + 1
                spans[result] = [first, max(first, intervals[result][1])]
    return spans


def view_roots(sched: Schedule, target: MemoryTarget = DEFAULT_TARGET) -> dict[Value, set[Value]]:
    """For each result that may share memory with other values, the buffers it may share
    (followed through chains): the first operand of a ``view`` op, the operand an update running
    in place overwrites, every operand of an op not known to return a fresh array."""
    roots: dict[Value, set[Value]] = {}
    for op in sched.ops:
        in_place = in_place_results(op)
        if in_place:
            for index, operand in in_place.items():
                base = op.operands[operand]
                roots[op.results[index]] = roots.get(base, {base})
            continue  # the other results of a fused group are fresh arrays
        if get_op(op.name).structural or not op.operands or target.returns_fresh(op):
            continue
        bases = op.operands[:1] if get_op(op.name).view else op.operands
        shared = set().union(*(roots.get(base, {base}) for base in bases))
        for result in op.results:
            roots[result] = shared
    return roots


# --- memory order -------------------------------------------------------------------------------
def reads_memory_order(op: Op) -> bool:
    """Does ``op``'s result depend on the memory order of its operand, not just on its values?
    Reductions with an inexact result do: NumPy sums pairwise along the axis that is contiguous
    in memory and in order along the others, so ``(x.T * 2.0).sum(axis=0)`` rounds differently
    when ``x.T * 2.0`` is C-ordered than when it is Fortran-ordered, as eager NumPy makes it. So
    do fused groups holding such a reduction."""
    opdef = get_op(op.name)
    if opdef.reduction:
        return any(r.type.dtype.kind in "fc" for r in op.results)
    return opdef.region_kernel and any(reads_memory_order(inner) for inner in op.regions[0].block.ops)


def eager_ordered_values(sched: Schedule, trust_c_order: bool = True) -> set[Value]:
    """Values that must have the memory order eager NumPy gives them: the operands of ops that
    read it (``reads_memory_order``), and, since NumPy gives a result the order of its operands
    (``order='K'``; a view keeps its base's), every value that order derives from, back to the
    graph's arguments, whose order is the caller's. Planned buffers are C-ordered, so none of
    these is planned; a fused op among them keeps NumPy's order itself (``eager_layout``).
    ``trust_c_order``: leave out the values NumPy lays out C-ordered anyway
    (``c_ordered_values``), which a planned buffer holds in eager's order."""
    pending = [v for op in sched.ops if reads_memory_order(op) for v in op.operands]
    c_ordered = c_ordered_values(sched) if trust_c_order else set()
    ordered: set[Value] = set()
    while pending:
        value = pending.pop()
        if value not in ordered and has_memory_order(value) and value not in c_ordered:
            ordered.add(value)
            pending.extend(_order_sources(value))
    return ordered


def c_ordered_values(sched: Schedule) -> set[Value]:
    """Values eager NumPy lays out C-ordered whatever the order of the caller's arrays: results
    of ops whose result is always C-ordered (matmul), and of elementwise ops (and fused groups of
    them) whose operands are all C-ordered or have no memory order. NumPy gives an elementwise
    result the order of its operands (``order='K'``), and an operand broadcast from a shape with
    at most one axis longer than 1 does not weigh in, so such a result is C-ordered; a planned
    (C-ordered) buffer then holds it in NumPy's own order."""
    known: set[Value] = set()
    for op in sched.ops:
        opdef = get_op(op.name)
        follows_operands = opdef.elementwise or (
            opdef.region_kernel
            and all(inner.name == CONST or get_op(inner.name).elementwise for inner in op.regions[0].block.ops[:-1])
        )
        if opdef.c_ordered_result or (follows_operands and all(_orderless_or_in(v, known) for v in op.operands)):
            known.update(op.results)
    return known


def _orderless_or_in(value: Value, known: set[Value]) -> bool:
    """Is ``value`` C-ordered (in ``known``), without memory order, or a broadcast of a value
    without memory order (``broadcast_to`` of a row or a number: its strides are those of the
    smaller array, zero elsewhere)?"""
    if value in known or not has_memory_order(value):
        return True
    owner = value.owner
    return isinstance(owner, Op) and owner.name == BROADCAST_TO and not has_memory_order(owner.operands[0])


def has_memory_order(value: Value) -> bool:
    """Can arrays of ``value``'s shape be laid out in more than one order? Not with at most one
    axis longer than 1: every fresh array of that shape is one contiguous run, and a reduction
    over it sums the same elements in the same order."""
    return sum(d != 1 for d in value.type.shape) > 1


def _order_sources(value: Value) -> list[Value]:
    """The values whose memory order ``value``'s may derive from: every operand of an op, unless
    its result is C-ordered whatever they are (``c_ordered_result``: matmul); through control
    flow, what a branch yields or a loop carries."""
    owner = value.owner
    if isinstance(owner, Block):
        region = owner.parent
        loop = region.parent if region is not None else None
        if loop is None or loop.name != WHILE_LOOP:
            return []  # a graph argument
        return _carried(loop, owner.args.index(value))
    if owner.name == COND:
        index = owner.results.index(value)
        return [region.block.ops[-1].operands[index] for region in owner.regions]
    if owner.name == WHILE_LOOP:
        return _carried(owner, owner.results.index(value))
    return [] if get_op(owner.name).c_ordered_result else list(owner.operands)


def _carried(loop: Op, index: int) -> list[Value]:
    return [loop.operands[index], loop.regions[1].block.ops[-1].operands[index]]


# --- slot assignment ----------------------------------------------------------------------------
@dataclass
class Plan:
    """The result of planning one graph.

    Attributes:
        slot_of: planned value -> slot number.
        slot_types: slot number -> (nbytes, dtype) of its buffer.
        per_call: slots that end up holding a graph output (allocated at every call).
        in_place: planned op -> operand index it overwrites.
    """

    slot_of: dict[Value, int] = field(default_factory=dict)
    slot_types: dict[int, tuple[int, np.dtype]] = field(default_factory=dict)
    per_call: set[int] = field(default_factory=set)
    in_place: dict[Op, int] = field(default_factory=dict)
    eager_layout: set[Op] = field(default_factory=set)


def _escaping_values(sched: Schedule, roots: dict[Value, set[Value]], handed_to_cond=()) -> set[Value]:
    """Buffers that leave their block through a yield or loop init (directly or via a view):
    NumPy allocates those afresh, so a carried value is never overwritten while still read.
    Values in ``handed_to_cond`` (see ``_cond_handovers``) leave through a ``cond`` yield only."""
    escaping: set[Value] = set()
    for op in sched.ops:
        if op.name in (YIELD, WHILE_LOOP):
            for value in op.operands:
                if value in handed_to_cond and _yields_to_cond(op):
                    continue
                escaping.add(value)
                escaping.update(roots.get(value, ()))
    return escaping


def _yields_to_cond(op: Op) -> bool:
    region = op.parent.parent if op.name == YIELD and op.parent is not None else None
    return region is not None and region.parent is not None and region.parent.name == COND


def _cond_handovers(sched: Schedule, roots, intervals, outputs: set[Value], output_views: set[Value]):
    """Values a ``cond`` branch yields whose buffer the cond result may simply take over: the
    result (and every result the value becomes) stays inside the graph, so a buffer kept across
    calls is safe. Returns {yielded value: last position of the results it becomes}.

    This is what lets the seed model write ``W @ x`` into a persistent buffer: eager NumPy pays a
    fresh 1 MiB result (and its page faults) at every call."""
    escaping = _escaping_values(sched, roots)
    becomes: dict[Value, list[Value]] = defaultdict(list)
    for op in sched.ops:
        if op.name == COND:
            for region in op.regions:
                for value, result in zip(region.block.ops[-1].operands, op.results):
                    becomes[value].append(result)
    viewed = set().union(*roots.values())
    handovers: dict[Value, int] = {}
    for value, results in becomes.items():
        conds = {r.owner for r in results}
        if not isinstance(value.owner, Op) or len(conds) != 1:
            continue
        if value.owner.parent not in [region.block for region in next(iter(conds)).regions]:
            continue  # defined before the cond: its buffer is not the branch's to hand over
        if any(r in escaping or r in outputs or r in output_views for r in results):
            continue
        if value in viewed or value in roots:
            continue  # views of the yielded value, or a yielded view: left to NumPy
        handovers[value] = max(intervals[r][1] for r in results)
    return handovers


def _sibling_slot(value: Value, plan: Plan, handovers: dict[Value, int]) -> int | None:
    """The slot of the value an earlier branch of the same ``cond`` yields in ``value``'s place:
    only one branch runs, so both may use one buffer."""
    block = value.owner.parent
    cond = block.parent.parent
    terminator = block.ops[-1]
    for region in cond.regions:
        if region.block is block:
            return None
        for mine, theirs in zip(terminator.operands, region.block.ops[-1].operands):
            if mine is value and theirs in handovers and theirs in plan.slot_of:
                slot = plan.slot_of[theirs]
                if plan.slot_types[slot] == (value.type.nbytes, value.type.dtype):
                    return slot
    return None


def _outputs(graph: Graph, roots: dict[Value, set[Value]]) -> tuple[set[Value], set[Value]]:
    """(graph outputs, buffers an output reaches only through a view: never planned)."""
    outputs = set(graph.outputs)
    through_views = set().union(*(roots.get(v, set()) for v in outputs))
    return outputs, through_views


def plan_memory(graph: Graph, target: MemoryTarget = DEFAULT_TARGET) -> Plan:
    """Assign buffer slots to the results of out-capable ops (see the module docstring).

    Values NumPy lays out C-ordered may be planned even where a reduction reads them, but a slot
    is held for the whole call while NumPy frees an array at its last use: where planning them
    raises the planned peak (a gradient graph, whose saved activations peak while such a slot
    waits for its value), the plan that leaves them to NumPy is kept instead."""
    sched = schedule(graph)
    trusted, strict = (eager_ordered_values(sched, trust) for trust in (True, False))
    relaxed = _plan(graph, sched, target, trusted)
    if trusted == strict:
        return relaxed
    fallback = _plan(graph, sched, target, strict)
    allocated, intervals = _allocations(graph, sched)
    peaks = [_planned_peak(plan, sched, allocated, intervals) for plan in (fallback, relaxed)]
    return fallback if peaks[0] < peaks[1] else relaxed


def _plan(graph: Graph, sched: Schedule, target: MemoryTarget, eager_ordered: set[Value]) -> Plan:
    """The plan that leaves ``eager_ordered`` values to NumPy (``eager_ordered_values``)."""
    intervals = live_intervals(graph, sched)
    roots = view_roots(sched, target)
    for view, bases in roots.items():  # a buffer lives as long as its longest-lived view
        for base in bases:
            intervals[base][1] = max(intervals[base][1], intervals[view][1])
    viewed = set().union(*roots.values())
    outputs, output_views = _outputs(graph, roots)
    handovers = _cond_handovers(sched, roots, intervals, outputs, output_views)
    for value, last in handovers.items():  # the buffer lives on as the cond result
        intervals[value][1] = max(intervals[value][1], last)
    # A buffer is C-ordered: fine where NumPy's result is C-ordered too, whatever the operands.
    order_kept = {v for v in eager_ordered if isinstance(v.owner, Op) and get_op(v.owner.name).c_ordered_result}
    unplannable = (
        _escaping_values(sched, roots, handovers)
        | output_views
        | (eager_ordered - order_kept)
        | _symbolically_sized(sched)
    )
    plan = Plan()
    plan.eager_layout = {
        op for op in sched.ops if get_op(op.name).region_kernel and any(r in eager_ordered for r in op.results)
    }
    free: dict[tuple[int, np.dtype], list[int]] = defaultdict(list)
    dying: dict[int, list[Value]] = defaultdict(list)
    handed_over: set[Value] = set()

    for op in sched.ops:
        position = sched.index[op]
        if _accepts_out(op, target) and op.results[0] not in unplannable:
            result = op.results[0]
            slot = _in_place_slot(op, position, plan, intervals, viewed, handed_over, target)
            if slot is None and result in handovers:
                slot = _sibling_slot(result, plan, handovers)
                if slot is not None:
                    handed_over.add(result)  # the sibling frees the shared slot
            _assign(plan, result, slot, free, in_outputs=result in outputs)
            dying[intervals[result][1]].append(result)
        for value in dying.pop(position, ()):
            if value not in handed_over:
                free[plan.slot_types[plan.slot_of[value]]].append(plan.slot_of[value])
    return _without_lone_outputs(plan)


def _symbolically_sized(sched: Schedule) -> set[Value]:
    """Results whose size is known only at run time: NumPy allocates them (slots are sized when
    the graph is compiled)."""
    return {v for op in sched.ops for v in op.results if has_symbolic(v.type.shape)}


def _assign(
    plan: Plan, result: Value, slot: int | None, free: dict[tuple[int, np.dtype], list[int]], in_outputs: bool
) -> None:
    """Give ``result`` the chosen slot, else a free one of its size and dtype, else (unless it is
    an output) the smallest larger free one of its dtype, else a new one."""
    nbytes = result.type.nbytes
    assert isinstance(nbytes, int), "values of symbolic size are not planned (_symbolically_sized)"
    key = (nbytes, result.type.dtype)
    if slot is not None and in_outputs and plan.slot_types.get(slot) != key:
        # The dying operand's slot is a larger buffer (a smaller value took its first bytes): an
        # output there would size the buffer to itself (``planned_slots``) under the larger value.
        slot = None
    if slot is None and free[key]:
        slot = free[key].pop()
    if slot is None and not in_outputs:
        slot = _larger_free_slot(free, key)
    if slot is None:
        slot = len(plan.slot_types)
        plan.slot_types[slot] = key
    plan.slot_of[result] = slot
    if in_outputs:
        plan.per_call.add(slot)


def _larger_free_slot(free: dict[tuple[int, np.dtype], list[int]], key: tuple[int, np.dtype]) -> int | None:
    """A free slot of ``key``'s dtype and more bytes (the fewest), which a value of ``key``
    occupies from its start: the shrinking columns of an unrolled factorization share one buffer
    instead of keeping one of each size across calls. Outputs never take one: the caller would
    get a view of a larger buffer."""
    nbytes, dtype = key
    sizes = [size for (size, kind), slots in free.items() if kind == dtype and size > nbytes and slots]
    return free[(min(sizes), dtype)].pop() if sizes else None


def _without_lone_outputs(plan: Plan) -> Plan:
    """Drop per-call slots that only ever hold their output: writing it with ``out=`` into a
    buffer allocated for it saves nothing over letting NumPy allocate it, and costs a keyword.
    Slots are renumbered densely in order of first use."""
    occupants: dict[int, int] = defaultdict(int)
    for slot in plan.slot_of.values():
        occupants[slot] += 1
    lone = {slot for slot in plan.per_call if occupants[slot] == 1}
    kept = sorted(set(plan.slot_types) - lone)
    renumber = {old: new for new, old in enumerate(kept)}
    result = Plan()
    for value, slot in plan.slot_of.items():
        if slot in renumber:
            result.slot_of[value] = renumber[slot]
    result.slot_types = {renumber[s]: plan.slot_types[s] for s in kept}
    result.per_call = {renumber[s] for s in plan.per_call if s in renumber}
    result.in_place = {op: i for op, i in plan.in_place.items() if op.results[0] in result.slot_of}
    result.eager_layout = plan.eager_layout
    return result


def _in_place_slot(
    op: Op, position: int, plan: Plan, intervals, viewed: set[Value], handed_over: set[Value], target: MemoryTarget
) -> int | None:
    """The slot of an operand that dies at ``op`` and may be overwritten by its result."""
    if not target.in_place_safe(op):
        return None
    result = op.results[0]
    for i, operand in enumerate(op.operands):
        if (
            operand in plan.slot_of
            and operand not in handed_over
            and operand not in viewed
            and intervals[operand][1] == position
            and operand.owner.parent is op.parent
            and operand.type.shape == result.type.shape
            and operand.type.dtype == result.type.dtype
        ):
            handed_over.add(operand)
            plan.in_place[op] = i
            return plan.slot_of[operand]
    return None


# --- memory report ------------------------------------------------------------------------------
@dataclass
class MemoryReport:
    """Memory figures of one graph, in bytes.

    Attributes:
        planned_peak: every planned slot (persistent and per call) plus the largest total of
            simultaneously live unplanned results.
        lower_bound: the largest total of simultaneously live results (inputs and captures
            excluded: they exist before the call).
        eager_estimate: the same for eager NumPy, where a named variable also keeps its array
            until the name is rebound or the function returns.
        persistent: bytes of the slots kept across calls.
        slots: how many slots the plan uses.
    """

    planned_peak: int
    lower_bound: int
    eager_estimate: int
    persistent: int
    slots: int

    def lines(self) -> list[str]:
        mib = 1 << 20
        return [
            f"planned peak   {self.planned_peak / mib:9.2f} MiB ({self.slots} buffers, "
            f"{self.persistent / mib:.2f} MiB kept across calls)",
            f"lower bound    {self.lower_bound / mib:9.2f} MiB (largest set of simultaneously live values)",
            f"eager estimate {self.eager_estimate / mib:9.2f} MiB",
        ]


def _allocated_results(op: Op) -> list[Value]:
    """The results running ``op`` allocates: none for an op that views or forwards its operand,
    and none of those written in place into an operand."""
    opdef = get_op(op.name)
    if opdef.structural or opdef.view:
        return []
    in_place = in_place_results(op)
    return [result for k, result in enumerate(op.results) if k not in in_place]


def _peak(sizes: dict[Value, int], intervals: dict[Value, list[int]], length: int) -> int:
    delta = [0] * (length + 2)
    for value, nbytes in sizes.items():
        first, last = intervals[value]
        delta[max(first, 0)] += nbytes
        delta[last + 1] -= nbytes
    peak = running = 0
    for d in delta:
        running += d
        peak = max(peak, running)
    return peak


def _eager_intervals(sched: Schedule, intervals: dict[Value, list[int]]) -> dict[Value, list[int]]:
    """Extend each named value until its name is rebound in its block, or the block ends."""
    eager = {v: list(span) for v, span in intervals.items()}
    by_block: dict[Block, list[Value]] = defaultdict(list)
    for op in sched.ops:
        for value in op.results:
            if value.name_hint and op.parent is not None:
                by_block[op.parent].append(value)
    for block, values in by_block.items():
        block_end = sched.index[block.ops[-1]]
        next_def: dict[str, int] = {}
        for value in reversed(values):
            name = value.name_hint or ""
            rebound = next_def.get(name, block_end)
            eager[value][1] = max(eager[value][1], rebound)
            next_def[name] = sched.index[value.owner]
    return eager


def memory_report(graph: Graph, target: MemoryTarget = DEFAULT_TARGET) -> MemoryReport:
    """Planned peak, live-set lower bound and an eager NumPy estimate for ``graph`` (as planned
    by ``plan_memory`` now, whether or not the pass ran). Symbolic sizes count as the building
    call's; values of data-dependent size (``x[:i]`` in a rolled loop) are not counted, since
    they have no size before the graph runs."""
    sched = schedule(graph)
    plan = plan_memory(graph, target)
    allocated, intervals = _allocations(graph, sched)
    persistent = sum(nbytes for s, (nbytes, _) in plan.slot_types.items() if s not in plan.per_call)
    length = len(sched.ops)
    return MemoryReport(
        planned_peak=_planned_peak(plan, sched, allocated, intervals),
        lower_bound=_peak(allocated, intervals, length),
        eager_estimate=_peak(allocated, _eager_intervals(sched, intervals), length),
        persistent=persistent,
        slots=len(plan.slot_types),
    )


def _allocations(graph: Graph, sched: Schedule) -> tuple[dict[Value, int], dict[Value, list[int]]]:
    """The bytes of each value a run allocates (for the building call's sizes) and the live
    intervals to count them over."""
    intervals = live_intervals(graph, sched)
    allocated = {v: _known_bytes(v) for op in sched.ops for v in _allocated_results(op)}
    # Region results are buffers too (a branch's or the last iteration's), unless they may be inputs.
    aliasing = may_alias_inputs(graph)
    for value, span in region_result_intervals(sched, intervals).items():
        intervals[value] = span
        if value not in aliasing:
            allocated[value] = _known_bytes(value)
    return allocated, intervals


def _planned_peak(plan: Plan, sched: Schedule, allocated: dict[Value, int], intervals: dict[Value, list[int]]) -> int:
    """The peak bytes of a run under ``plan``: every slot, for the whole call, plus the values
    NumPy allocates (``_allocations``), while they live."""
    unplanned = {
        v: n for v, n in allocated.items() if v not in plan.slot_of and not _takes_over_planned_buffers(v, plan)
    }
    slot_bytes = sum(nbytes for nbytes, _ in plan.slot_types.values())
    return slot_bytes + _peak(unplanned, intervals, len(sched.ops))


def _known_bytes(value: Value) -> int:
    """The value's size in bytes for the building call, 0 where the data decide it."""
    nbytes = value.type.nbytes
    return 0 if is_data_dependent(nbytes) else hint_of(nbytes)


def _takes_over_planned_buffers(result: Value, plan: Plan) -> bool:
    """A cond result whose every branch yields a planned value: it is that buffer, not a new one."""
    cond = result.owner
    if cond.name != COND:
        return False
    index = cond.results.index(result)
    return all(region.block.ops[-1].operands[index] in plan.slot_of for region in cond.regions)


# --- the pass -----------------------------------------------------------------------------------
def clear_plan(graph: Graph) -> bool:
    """Remove every memory-plan attribute; True if there were any."""
    changed = False
    for op in schedule(graph).ops:
        for key in PLAN_ATTRS:
            if key in op.attrs:
                del op.attrs[key]
                changed = True
    return changed


def apply_plan(graph: Graph, plan: Plan) -> None:
    """Record ``plan`` as op attributes: ``out_buffer=slot`` on every planned op, ``in_place=i``
    where the result overwrites operand ``i`` (which dies there), and ``eager_layout=True`` on a
    fused op whose results must have the memory order unfused NumPy gives them."""
    for op in schedule(graph).ops:
        if op.results and op.results[0] in plan.slot_of:
            op.attrs["out_buffer"] = plan.slot_of[op.results[0]]
            if op in plan.in_place:
                op.attrs["in_place"] = plan.in_place[op]
        if op in plan.eager_layout:
            op.attrs["eager_layout"] = True


def planned_slots(graph: Graph) -> tuple[dict[int, tuple[tuple[int, ...], np.dtype]], set[int]]:
    """Read the plan back from the op attributes (what the codegen allocates).

    Returns:
        slot -> (shape, dtype) of its buffer: the shape of the output it ends up holding, else of
        its first occupant, the largest (occupants of another shape use a reshaped view of its
        first bytes); and the set of slots that hold a graph output, which are allocated at
        every call.
    """
    occupants: dict[int, Value] = {}
    for op in schedule(graph).ops:
        slot = op.attrs.get("out_buffer")
        if slot is not None:
            occupants.setdefault(slot, op.results[0])
    per_call: set[int] = set()
    for value in graph.outputs:
        slot = value.owner.attrs.get("out_buffer") if isinstance(value.owner, Op) else None
        if slot is not None:
            occupants[slot] = value
            per_call.add(slot)
    return {slot: (tuple(int(d) for d in v.type.shape), v.type.dtype) for slot, v in occupants.items()}, per_call


class MemoryPlan(Pass):
    """Plan ``out=`` buffers for every out-capable op; the last pass of the pipeline.

    Args:
        target: what the backend that runs the graph can do (``out=`` forms, in-place safety,
            fresh results); the op definitions' traits when None.
    """

    name = "memory-plan"

    def __init__(self, target: MemoryTarget | None = None):
        self.target = target or DEFAULT_TARGET

    def run(self, graph: Graph) -> bool:
        cleared = clear_plan(graph)
        plan = plan_memory(graph, self.target)
        apply_plan(graph, plan)
        return bool(plan.slot_of or plan.eager_layout) or cleared
