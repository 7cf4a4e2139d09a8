"""In-place updates: an update writes into its operand where the operand's old value is dead.

``A[i] = v`` stages as ``%A_1 = setitem %A, %v, %i``, a new value, since SSA values never change.
Run as written, its kernel copies all of ``A`` for every update: an unrolled ``for i in range(800):
A[i] = ...`` makes 800 copies of ``A``, and a loop carrying ``A`` copies it at every iteration.
This pass marks such an op ``in_place_update=I`` (I: the operand it overwrites) where nothing
reads the old value again; the backend then runs ``A[i] = v`` in ``A``'s own buffer, as eager code
does, and the result is that buffer. Functional updates are the ops whose
``OpDef.updates_operand`` names the operand they update (``setitem``, assigning
``x.real``/``x.imag``). An elementwise ufunc is marked too where it updates an argument the
function updates in place (``x += y``, ``data -= mean``: eager code writes into the caller's
array; the graph computed a new one and copied it back after the call); it then runs its
``out=`` form into that argument, unless that operand is a view or a reduction reads the
result's memory order (``overwritable_operands``). A fused group is marked the same way, with
one entry per result (``in_place_update=(I, None)``: result 0 goes into operand I, result 1 into
a new array), where its kernels would read the operand at the very elements they write it
(``group_overwritable_operands``). Other elementwise results are the memory planner's, which
writes them into dying planned buffers.

The rule. An update of operand ``o`` runs in place when every value that may share ``o``'s buffer
(its *buffer class*, below)

- is no constant (the graph keeps it across calls), and no graph argument or capture, except one
  the function updates in place itself: the executor writes the final value back into it after the
  call (``writes_back`` on ``return``), so its old contents are the function's to overwrite;
- and, if it is computed before the update on the way to it, is not read after the update: not by
  a later op of the same block or by anything inside one, and not by anything inside a loop that
  contains the update but not the value's definition, the update itself included (the next
  iteration reads it again). Reads in the other branch of a ``cond`` never run with the update;
- and is no index operand of the update itself.

Buffer classes join the values that may share memory: a view and its base; the result of an op
not known to return a fresh array and its operands; a ``cond`` result and what its branches yield;
a loop's initial value, block arguments, yielded value and result; and an update chosen to run in
place and its operand. Updates are decided in program order, so each decision sees the buffers the
earlier ones share. A value computed after the update holds the new contents, so only the values
computed before it (those that dominate it) can hold the old ones.

Loops. An update of a loop-carried value in the body runs in place at every iteration once the
value the loop starts from is the loop's own. Where it is not (a constant, an argument the function
does not update, a value read again after the loop...), one ``copy`` of it before the loop makes it
so, instead of a copy per iteration; the copy goes before the outermost loop that carries the value
when that is enough.

An update never meets a read-only array: arguments the caller passes read-only run eagerly
(``Program.runs_eagerly``), and staging refuses writes into the views NumPy makes read-only
(``np.broadcast_to``, ``np.diagonal``) and into arrays a branch or loop may have made views.

Everything here is a decision the memory planner and the backend read: the planner treats an
in-place result as a view of its operand (the buffer lives until both are dead), alias analysis
follows it to the inputs (an output that is an argument's buffer is copied for the caller), and
the code generator writes the update out (``a0[i, :] = v``), calls ``OpDef.in_place_kernel``, or
gives a ufunc the operand as ``out=``.
"""

from __future__ import annotations

import functools

from dy2st.ir.core import (
    COND,
    CONST,
    IN_PLACE_UPDATE,
    WHILE_LOOP,
    WRITES_BACK,
    Block,
    Graph,
    Op,
    Value,
    kernel_attrs,
)
from dy2st.ir.opcodes import RETURNS_CALLER_ARRAY
from dy2st.ir.opdefs import get_op, in_place_results
from dy2st.ops.indexing import COPY_IF_OVERLAPPING
from dy2st.ops.shape import COPY
from dy2st.passes.base import Pass
from dy2st.passes.carried_buffers import RotationGroups, written_arguments
from dy2st.passes.dataflow import may_have
from dy2st.passes.memory_plan import (
    DEFAULT_TARGET,
    MemoryTarget,
    Schedule,
    eager_ordered_values,
    live_intervals,
    schedule,
)


# --- buffer classes -----------------------------------------------------------------------------
class BufferClasses:
    """Union-find over values that may share a buffer. Each class keeps its members and the flags
    of any of them: ``FOREIGN`` for a buffer the function may not overwrite (``Analysis.owned``),
    ``CALLERS`` for an argument the function updates in place."""

    FOREIGN, CALLERS = "foreign", "callers"

    def __init__(self) -> None:
        self._parent: dict[Value, Value] = {}
        self._members: dict[Value, list[Value]] = {}
        self._flags: dict[Value, set[str]] = {}  # by root

    def find(self, value: Value) -> Value:
        root = value
        while self._parent.get(root, root) is not root:
            root = self._parent[root]
        while value is not root:  # path compression
            self._parent[value], value = root, self._parent[value]
        return root

    def union(self, a: Value, b: Value) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra is rb:
            return
        big, small = (ra, rb) if len(self.members(ra)) >= len(self.members(rb)) else (rb, ra)
        self._parent[small] = big
        self._members[big] = self.members(big) + self._members.pop(small, [small])
        self._flags.setdefault(big, set()).update(self._flags.pop(small, ()))

    def mark(self, value: Value, flag: str) -> None:
        self._flags.setdefault(self.find(value), set()).add(flag)

    def has(self, value: Value, flag: str) -> bool:
        return flag in self._flags.get(self.find(value), ())

    def members(self, value: Value) -> list[Value]:
        root = self.find(value)
        return self._members.get(root, [root])

    def prune(self, value: Value, keep) -> list[Value]:
        """The members of ``value``'s class for which ``keep`` holds; the others are dropped
        from the class for good (``keep`` must stay false for them in later questions)."""
        root = self.find(value)
        kept = [member for member in self.members(root) if keep(member)]
        self._members[root] = kept
        return kept

    def same(self, a: Value, b: Value) -> bool:
        return self.find(a) is self.find(b)


def buffer_classes(sched: Schedule, target: MemoryTarget) -> BufferClasses:
    """The values of the schedule joined by every way two of them may share memory (see the
    module docstring), in-place updates already chosen included."""
    classes = BufferClasses()
    for op in sched.ops:
        if op.name == COND:
            for region in op.regions:
                for result, value in zip(op.results, region.block.ops[-1].operands):
                    classes.union(result, value)
        elif op.name == WHILE_LOOP:
            cond_block, body_block = op.regions[0].block, op.regions[1].block
            for i, result in enumerate(op.results):
                for value in (op.operands[i], cond_block.args[i], body_block.args[i], body_block.ops[-1].operands[i]):
                    classes.union(result, value)
        for result, base in _shared_buffers(op, target):
            classes.union(result, base)
    return classes


def _shared_buffers(op: Op, target: MemoryTarget) -> list[tuple[Value, Value]]:
    """The (result, operand) pairs of ``op`` that may share a buffer (none for control flow: see
    above): a result written in place and its operand, or every result with the operands a view
    or an op not known to return a fresh array may share."""
    in_place = in_place_results(op)
    if in_place:
        return [(op.results[result], op.operands[operand]) for result, operand in in_place.items()]
    opdef = get_op(op.name)
    if opdef.structural or target.returns_fresh(op):
        return []
    bases = op.operands[:1] if opdef.view else op.operands
    return [(result, base) for result in op.results for base in bases]


# --- where values are defined and read ----------------------------------------------------------
def _viewing_results(op: Op, found: set[Value], target: MemoryTarget) -> list[Value]:
    """Results that may view another value's buffer: of a view op or of an op not known to return
    a fresh array, and of an update that runs, or may be chosen to run, in place in a value that
    may be a view (decided before any update is, so it holds whatever this pass decides)."""
    in_place = in_place_results(op)
    updates = get_op(op.name).updates_operand
    if not in_place and updates is not None:
        in_place = {0: updates}
    if in_place:
        return [op.results[result] for result, operand in in_place.items() if op.operands[operand] in found]
    return op.results if _shared_buffers(op, target) else []


def _defining_block(value: Value) -> Block:
    owner = value.owner
    block = owner.parent if isinstance(owner, Op) else owner
    assert isinstance(block, Block), "every value of a graph is defined in a block"
    return block


def _ancestor_in(op: Op, block: Block) -> Op | None:
    """The op of ``block`` that is ``op`` or contains it, or None when ``block`` does not."""
    current: Op | None = op
    while current is not None and current.parent is not block:
        region = current.parent.parent if current.parent is not None else None
        current = region.parent if region is not None else None
    return current


def _region_holding(op: Op, ancestor: Op):
    """The region of ``ancestor`` that holds ``op``."""
    for region in ancestor.regions:
        if _ancestor_in(op, region.block) is not None:
            return region
    raise AssertionError("the op is inside its ancestor")


class Analysis:
    """What deciding one update needs: the schedule, liveness, uses, positions, buffer classes."""

    def __init__(self, graph: Graph, target: MemoryTarget):
        self.graph = graph
        self.sched = schedule(graph)
        self.intervals = live_intervals(graph, self.sched)
        self.classes = buffer_classes(self.sched, target)
        self.position: dict[Op, int] = {}
        self.users: dict[Value, list[Op]] = {}
        for op in graph.walk():
            for value in op.operands:
                self.users.setdefault(value, []).append(op)
        for block in _blocks(graph.body):
            for i, op in enumerate(block.ops):
                self.position[op] = i
        self.written_arguments = written_arguments(graph)
        for value in self.intervals:
            if not self.owned(value):
                self.classes.mark(value, BufferClasses.FOREIGN)
        for index in self.written_arguments:
            self.classes.mark(graph.body.args[index], BufferClasses.CALLERS)
        self.eager_ordered = eager_ordered_values(self.sched)
        self.views = may_have(graph, functools.partial(_viewing_results, target=target))
        self.rotations = RotationGroups(graph, target)

    def may_update_in_place(self, update: Op, overwritten: int) -> bool:
        """Does nothing read the old value of operand ``overwritten`` after ``update`` (the rule of
        the module docstring)? Updates are asked in schedule order: a member of the class dead
        before one is dead before every later one, so it is dropped from the class."""
        return self.reads_after(update, overwritten) == []

    def reads_after(self, update: Op, overwritten: int) -> list[Value] | None:
        """The values that may share operand ``overwritten``'s buffer and are read after
        ``update`` (empty: it may run in place), or None where the update may never run in place
        (a buffer the function may not write, or one an index of the update shares). Values a
        ``copy_if_overlapping`` operand checks are not counted: it copies if the update would
        change what they hold."""
        opdef = get_op(update.name)
        operand = update.operands[overwritten]
        first_index = opdef.index_operands if opdef.index_operands is not None else len(update.operands)
        if any(self.classes.same(index, operand) for index in update.operands[first_index:]):
            return None
        if self.classes.has(operand, BufferClasses.FOREIGN):
            return None
        at = self.sched.index[update]
        live = self.classes.prune(operand, lambda value: self.intervals[value][1] >= at)
        checked = _checked_by(operand)
        return [
            value
            for value in live
            if value not in checked and not self.rotations.apart(value, operand) and self._read_after(value, update)
        ]

    def owned(self, value: Value) -> bool:
        """May the function overwrite ``value``'s buffer: not a constant, and not an argument the
        eager function leaves alone?"""
        owner = value.owner
        if isinstance(owner, Op):
            return owner.name != CONST
        if owner is self.graph.body:
            return value.index in self.written_arguments
        return True

    def _read_after(self, value: Value, update: Op) -> bool:
        """Is ``value`` computed before ``update`` (on every path to it) and read after it?"""
        home = _defining_block(value)
        at = _ancestor_in(update, home)
        if at is None:
            return False  # defined in a block that does not contain the update
        if isinstance(value.owner, Op) and self.position[value.owner] >= self.position[at]:
            return False  # defined after the update, or by the control-flow op holding it
        return any(self._runs_after(user, update, home) for user in self.users.get(value, ()))

    def _runs_after(self, user: Op, update: Op, block: Block) -> bool:
        """Can ``user`` (which reads a value defined in ``block``) run after ``update`` while the
        value still holds the old contents?"""
        if user is update:  # again, in the next iteration of a loop the value is defined outside
            return _repeats_in(update, block)
        while True:
            mine, theirs = _ancestor_in(update, block), _ancestor_in(user, block)
            assert mine is not None and theirs is not None, "both are inside the value's block"
            if mine is not theirs:
                return self.position[theirs] > self.position[mine]
            if user is theirs:
                return False  # an operand of the control-flow op holding the update: read first
            if theirs.name == WHILE_LOOP:
                return True  # the next iteration reads the value again
            region = _region_holding(user, theirs)
            if region is not _region_holding(update, theirs):
                return False  # the other branch of a cond: never runs with the update
            block = region.block


def _checked_by(operand: Value) -> set[Value]:
    """The values a ``copy_if_overlapping`` op producing ``operand`` checks for overlap."""
    op = operand.op
    if op is None or op.name != COPY_IF_OVERLAPPING:
        return set()
    return set(op.operands[1 + op.attrs["indices"] :])


def _repeats_in(op: Op, block: Block) -> bool:
    """Is ``op`` inside a loop that is itself inside ``block`` (so it runs repeatedly while a
    value of ``block`` stays the same)?"""
    while op.parent is not block:
        region = op.parent.parent if op.parent is not None else None
        if region is None or region.parent is None:
            return False
        op = region.parent
        if op.name == WHILE_LOOP:
            return True
    return False


def _blocks(block: Block):
    yield block
    for op in block.ops:
        for region in op.regions:
            yield from _blocks(region.block)


# --- candidates -------------------------------------------------------------------------------
def overwritable_operands(op: Op, analysis: Analysis, target: MemoryTarget) -> list[int]:
    """The operands ``op`` could write its result into, if their old values are dead: the one a
    functional update updates, and for an elementwise ufunc (its ``out=`` form reads each
    element before writing it) an operand of the result's shape and dtype that is an argument the
    function updates in place (``x += y``: eager code writes into the caller's ``x``; results
    of fresh arrays are the memory planner's). For a ufunc, that operand may not be a view (a
    view's layout is not the one eager code gives a result), and the result's memory order must
    not matter to a reduction (``eager_ordered_values``). Never on a 0-d result (0-d
    values may be NumPy scalars, which are immutable), nor in a loop condition (whose block
    arguments the body reads as the same carried values)."""
    opdef = get_op(op.name)
    result = op.results[0].type if len(op.results) == 1 else None
    if result is None or result.ndim == 0 or _in_loop_condition(op):
        return []
    if opdef.updates_operand is not None:
        return [opdef.updates_operand] if target.runs_in_place(op) else []
    if opdef.ufunc is None or not target.in_place_safe(op) or not target.accepts_out(op):
        return []
    if op.results[0] in analysis.eager_ordered:
        return []
    return [i for i, operand in enumerate(op.operands) if _updated_argument_like(operand, op.results[0], analysis)]


def _updated_argument_like(operand: Value, result: Value, analysis: Analysis) -> bool:
    """Is ``operand`` an array of ``result``'s shape and dtype that may be an argument the
    function updates in place (its buffer class holds the caller's arrays), and no view?"""
    return (
        (operand.type.shape, operand.type.dtype) == (result.type.shape, result.type.dtype)
        and not operand.type.weak
        and analysis.classes.has(operand, BufferClasses.CALLERS)
        and operand not in analysis.views
    )


def group_overwritable_operands(group: Op, result: int, analysis: Analysis) -> list[int]:
    """The operands a fused group could write its result ``result`` into, if their old values are
    dead: by the rule of ``overwritable_operands`` for an elementwise ufunc (an argument the
    function updates in place, of the result's shape and dtype, no view, no result whose memory
    order a reduction reads), where each backend's kernel would read the operand at the very
    elements it writes: the group has no reduction (whose rows are read whole), the operand is
    read no later than the ufunc computing the result (``_read_before_written``), and no other
    operand of the group may share its memory (a tile of it could be read after the operand's
    tile there was written)."""
    value = group.results[result]
    block = group.regions[0].block
    if value.type.ndim == 0 or _in_loop_condition(group) or value in analysis.eager_ordered:
        return []
    if _returned_as_new_array(value, analysis.graph):
        return []  # written into an argument's buffer, it would be copied out for the caller
    if any(get_op(inner.name).reduction for inner in block.ops):
        return []
    classes = analysis.classes
    return [
        i
        for i, operand in enumerate(group.operands)
        if _updated_argument_like(operand, value, analysis)
        and not any(classes.same(other, operand) for other in group.operands if other is not operand)
        and _read_before_written(block, result, i)
    ]


def _returned_as_new_array(value: Value, graph: Graph) -> bool:
    """Does the function return ``value`` as an array of its own (``return old + x``), rather than
    only as what it writes back into an argument or as the caller's array itself? (A group that
    updates ``x`` may compute such a value after reading ``x`` for the last time.)"""
    terminator = graph.body.terminator
    if terminator is None:
        return False
    written_back = terminator.attrs.get(WRITES_BACK, ())
    callers = terminator.attrs.get(RETURNS_CALLER_ARRAY, ())
    return any(
        returned is value
        and (i >= len(written_back) or written_back[i] is None)
        and (i >= len(callers) or callers[i] is None)
        for i, returned in enumerate(terminator.operands)
    )


def _read_before_written(block: Block, result: int, argument: int) -> bool:
    """Is the region's argument ``argument`` read no later than the op computing its result
    ``result``, which is a single-result ufunc (one NumPy call, or one element at a time, reads
    each element before writing it; a select writes before it reads)?"""
    computing = block.ops[-1].operands[result].op
    if computing is None or computing.parent is not block:
        return False
    ufunc = get_op(computing.name).ufunc
    if ufunc is None or ufunc.nout != 1:
        return False
    ops = block.ops[:-1]
    later = ops[ops.index(computing) + 1 :]
    return not any(block.args[argument] in op.operands for op in later)


def _in_loop_condition(op: Op) -> bool:
    block = op.parent
    while block is not None and block.parent is not None:
        loop = block.parent.parent
        if loop is not None and loop.name == WHILE_LOOP and block is loop.regions[0].block:
            return True
        block = loop.parent if loop is not None else None
    return False


def _carried_chain(value: Value) -> list[tuple[Op, int]]:
    """(loop, index) of each loop that carries ``value`` in as its body argument, innermost first:
    the body argument of a loop whose initial value is a body argument of an outer loop..."""
    chain = []
    while isinstance(value.owner, Block):
        region = value.owner.parent
        loop = region.parent if region is not None else None
        if loop is None or loop.name != WHILE_LOOP or region is not loop.regions[1]:
            break
        chain.append((loop, value.index))
        value = loop.operands[value.index]
    return chain


# --- copies of initial values ------------------------------------------------------------------
def _copy_before(loop: Op, index: int) -> Op:
    """Make the loop start from a copy of its initial value ``index``: ``%c = copy %init`` just
    before the loop."""
    initial = loop.operands[index]
    copy = Op(COPY, [initial], [initial.type.strong()], loc=loop.loc)
    copy.results[0].name_hint = initial.name_hint
    block = loop.parent
    assert block is not None
    ops = block.ops
    ops.insert(ops.index(loop), copy)
    block.set_ops(ops)
    loop.operands[index] = copy.results[0]
    return copy


def _undo_copy(loop: Op, index: int, copy: Op) -> None:
    loop.operands[index] = copy.operands[0]
    block = loop.parent
    assert block is not None
    block.set_ops([op for op in block.ops if op is not copy])


# --- the pass -----------------------------------------------------------------------------------
def choose_in_place_updates(graph: Graph, target: MemoryTarget = DEFAULT_TARGET) -> int:
    """Mark every op that may run in place (see the module docstring), adding a copy before a
    loop where that lets a loop-carried update run in place. Returns how many copies were added."""
    for op in graph.walk():
        op.attrs.pop(IN_PLACE_UPDATE, None)
    analysis = Analysis(graph, target)
    copies = 0
    for op in list(analysis.sched.ops):
        if get_op(op.name).region_kernel:
            _choose_group_results(op, analysis)
            continue
        for overwritten in overwritable_operands(op, analysis, target):
            if analysis.may_update_in_place(op, overwritten):
                _mark(op, overwritten, analysis)
                break
            if get_op(op.name).updates_operand == overwritten:
                analysis, copied = _with_copy_before_loop(graph, op, overwritten, analysis, target)
                copies += copied
                if copied:
                    break
                analysis, checked = _with_overlap_check(graph, op, overwritten, analysis, target)
                copies += checked
                if checked:
                    break
    return copies


def _with_copy_before_loop(
    graph: Graph, update: Op, overwritten: int, analysis: Analysis, target: MemoryTarget
) -> tuple[Analysis, bool]:
    """Try a copy of the initial value of each loop carrying the update's operand, outermost
    first (fewest copies); keep the first that lets the update run in place. Returns the analysis
    of the graph as it is now, and whether a copy was added."""
    for loop, index in reversed(_carried_chain(update.operands[overwritten])):
        copy = _copy_before(loop, index)
        analysis = Analysis(graph, target)
        if analysis.may_update_in_place(update, overwritten):
            _mark(update, overwritten, analysis)
            return analysis, True
        _undo_copy(loop, index, copy)
        analysis = Analysis(graph, target)
    return analysis, False


def _with_overlap_check(
    graph: Graph, update: Op, overwritten: int, analysis: Analysis, target: MemoryTarget
) -> tuple[Analysis, bool]:
    """Where only arrays that may be views of the updated array are read after an update that
    writes a view of it (``forward[:, j] = ...`` while ``y_prev = forward[:, j - 1]`` is read
    in the next iteration), run it in place after a ``copy_if_overlapping`` of the array: the
    array itself when the written part shares no element with them (as eager code, whose views
    see only what they overlap), else a copy. Returns the analysis of the graph as it is now,
    and whether the check was added."""
    opdef = get_op(update.name)
    types = [v.type for v in update.operands]
    if opdef.updated_region is None or opdef.updated_region(types, **kernel_attrs(update)) is None:
        return analysis, False
    blocking = analysis.reads_after(update, overwritten)
    array = update.operands[overwritten]
    if not blocking or array in blocking or any(value.type.ndim == 0 for value in blocking):
        return analysis, False  # the array itself read later: the check would always copy
    indices = update.operands[opdef.index_operands :] if opdef.index_operands is not None else []
    check = Op(
        COPY_IF_OVERLAPPING,
        [array, *indices, *blocking],
        [array.type.strong()],
        {"template": update.attrs["template"], "indices": len(indices)},
        loc=update.loc,
    )
    check.results[0].name_hint = array.name_hint
    block = update.parent
    assert block is not None
    ops = block.ops
    # As early as its operands allow: an op computing the update's value may then write it
    # into the view of the checked array (the update-destinations pass).
    defined_here = [ops.index(v.op) + 1 for v in check.operands if v.op is not None and v.op.parent is block]
    ops.insert(max(defined_here, default=0), check)
    block.set_ops(ops)
    update.operands[overwritten] = check.results[0]
    analysis = Analysis(graph, target)
    if analysis.may_update_in_place(update, overwritten):
        _mark(update, overwritten, analysis)
        return analysis, True
    update.operands[overwritten] = array
    block.set_ops([op for op in block.ops if op is not check])
    return Analysis(graph, target), False


def _mark(op: Op, overwritten: int, analysis: Analysis) -> None:
    op.attrs[IN_PLACE_UPDATE] = overwritten
    analysis.classes.union(op.results[0], op.operands[overwritten])


def _choose_group_results(group: Op, analysis: Analysis) -> None:
    """Write each result of a fused group into the first operand it may overwrite whose old value
    is dead (each operand takes one result); mark the group ``in_place_update=(operand or None,
    ...)``, one entry per result."""
    chosen: list[int | None] = [None] * len(group.results)
    for result in range(len(group.results)):
        for operand in group_overwritable_operands(group, result, analysis):
            if operand not in chosen and analysis.may_update_in_place(group, operand):
                chosen[result] = operand
                analysis.classes.union(group.results[result], group.operands[operand])
                break
    if any(operand is not None for operand in chosen):
        group.attrs[IN_PLACE_UPDATE] = tuple(chosen)


class InPlaceUpdates(Pass):
    """Run updates (``A[i] = v``, ``x += y`` of an argument, a fused group computing an argument's
    new value) in their operand's buffer where its old value is dead.

    Args:
        target: what the backend that runs the graph can do (which updates it runs in place,
            which ops return fresh arrays); the op definitions' traits when None.
    """

    name = "in-place-updates"

    def __init__(self, target: MemoryTarget | None = None):
        self.target = target or DEFAULT_TARGET

    def run(self, graph: Graph) -> bool:
        before = _decisions(graph)
        copies = choose_in_place_updates(graph, self.target)
        return bool(copies) or _decisions(graph) != before


def _decisions(graph: Graph) -> dict[Op, int]:
    return {op: op.attrs[IN_PLACE_UPDATE] for op in graph.walk() if IN_PLACE_UPDATE in op.attrs}
