"""In-place updates: a functional update writes into its operand where the old value is dead.

``A[i] = v`` stages as ``%A_1 = setitem %A, %v, %i``, a new value, since SSA values never change.
Run as written, its kernel copies all of ``A`` for every update: an unrolled ``for i in range(800):
A[i] = ...`` makes 800 copies of ``A``, and a loop carrying ``A`` copies it at every iteration.
This pass marks such an op ``in_place_update=True`` where nothing reads the old value again; the
backend then runs ``A[i] = v`` in ``A``'s own buffer, as eager code does, and the result is that
buffer. Functional updates are the ops whose ``OpDef.updates_operand`` names the operand they
update (``setitem``, assigning ``x.real``/``x.imag``).

The rule. An update of operand ``o`` runs in place when every value that may share ``o``'s buffer
(its *buffer class*, below)

- is no constant (the graph keeps it across calls), and no graph argument or capture, except one
  the function updates in place itself: the executor writes the final value back into it after the
  call (``writes_back`` on ``return``), so its old contents are the function's to overwrite;
- and, if it is computed before the update on the way to it, is not read after the update: not by
  a later op of the same block or by anything inside one, and not by anything inside a loop that
  contains the update but not the value's definition (the next iteration reads it again). Reads
  in the other branch of a ``cond`` never run with the update;
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
the code generator calls ``OpDef.in_place_kernel``.
"""

from __future__ import annotations

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
)
from dy2st.ir.opdefs import get_op, overwritten_operand
from dy2st.ops.shape import COPY
from dy2st.passes.base import Pass
from dy2st.passes.memory_plan import DEFAULT_TARGET, MemoryTarget, Schedule, live_intervals, schedule


# --- buffer classes -----------------------------------------------------------------------------
class BufferClasses:
    """Union-find over values that may share a buffer. Each class keeps its members and whether
    any of them is *foreign*: a buffer the function may not overwrite (see ``Analysis.owned``)."""

    def __init__(self) -> None:
        self._parent: dict[Value, Value] = {}
        self._members: dict[Value, list[Value]] = {}
        self._foreign: set[Value] = set()  # roots of classes holding a foreign buffer

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
        if small in self._foreign:
            self._foreign.add(big)

    def mark_foreign(self, value: Value) -> None:
        self._foreign.add(self.find(value))

    def is_foreign(self, value: Value) -> bool:
        return self.find(value) in self._foreign

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
        for base in _shared_operands(op, target):
            for result in op.results:
                classes.union(result, base)
    return classes


def _shared_operands(op: Op, target: MemoryTarget) -> list[Value]:
    """The operands whose buffer ``op``'s results may share (none for control flow: see above)."""
    opdef = get_op(op.name)
    overwritten = overwritten_operand(op)
    if overwritten is not None:
        return [op.operands[overwritten]]
    if opdef.structural or target.returns_fresh(op):
        return []
    return op.operands[:1] if opdef.view else list(op.operands)


# --- where values are defined and read ----------------------------------------------------------
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
        self.written_arguments = _written_arguments(graph)
        for value in self.intervals:
            if not self.owned(value):
                self.classes.mark_foreign(value)

    def may_update_in_place(self, update: Op) -> bool:
        """Does nothing read the old value of ``update``'s updated operand after it (the rule of
        the module docstring)? Updates are asked in schedule order: a member of the class dead
        before one is dead before every later one, so it is dropped from the class."""
        opdef = get_op(update.name)
        operand = update.operands[opdef.updates_operand or 0]
        first_index = opdef.index_operands if opdef.index_operands is not None else len(update.operands)
        if any(self.classes.same(index, operand) for index in update.operands[first_index:]):
            return False
        if self.classes.is_foreign(operand):
            return False
        at = self.sched.index[update]
        live = self.classes.prune(operand, lambda value: self.intervals[value][1] >= at)
        return not any(self._read_after(value, update) for value in live)

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
        while True:
            mine, theirs = _ancestor_in(update, block), _ancestor_in(user, block)
            assert mine is not None and theirs is not None, "both are inside the value's block"
            if mine is not theirs:
                return self.position[theirs] > self.position[mine]
            if user is update or user is theirs:
                return False  # the update's own operand, or an operand of the op holding it
            if theirs.name == WHILE_LOOP:
                return True  # the next iteration reads the value again
            region = _region_holding(user, theirs)
            if region is not _region_holding(update, theirs):
                return False  # the other branch of a cond: never runs with the update
            block = region.block


def _blocks(block: Block):
    yield block
    for op in block.ops:
        for region in op.regions:
            yield from _blocks(region.block)


def _written_arguments(graph: Graph) -> set[int]:
    """Indices of the graph arguments the function updates in place (written back after a call)."""
    terminator = graph.body.terminator
    targets = terminator.attrs.get(WRITES_BACK, ()) if terminator is not None else ()
    return {index for index in targets if index is not None}


# --- candidates -------------------------------------------------------------------------------
def _is_candidate(op: Op, target: MemoryTarget) -> bool:
    """A functional update the backend can run in place, on an array (0-d values may be NumPy
    scalars, which are immutable), outside a loop condition (whose block arguments the body
    reads as the same carried values)."""
    opdef = get_op(op.name)
    if opdef.updates_operand is None or not target.runs_in_place(op):
        return False
    if op.results[0].type.ndim == 0:
        return False
    return not _in_loop_condition(op)


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
    """Mark every functional update that may run in place (see the module docstring), adding a
    copy before a loop where that lets a loop-carried update run in place. Returns how many
    copies were added."""
    for op in graph.walk():
        op.attrs.pop(IN_PLACE_UPDATE, None)
    analysis = Analysis(graph, target)
    candidates = [op for op in analysis.sched.ops if _is_candidate(op, target)]
    copies = 0
    for update in candidates:
        if analysis.may_update_in_place(update):
            _mark(update, analysis)
            continue
        operand = update.operands[get_op(update.name).updates_operand or 0]
        for loop, index in reversed(_carried_chain(operand)):  # outermost first: fewest copies
            copy = _copy_before(loop, index)
            analysis = Analysis(graph, target)
            if analysis.may_update_in_place(update):
                _mark(update, analysis)
                copies += 1
                break
            _undo_copy(loop, index, copy)
            analysis = Analysis(graph, target)
    return copies


def _mark(update: Op, analysis: Analysis) -> None:
    update.attrs[IN_PLACE_UPDATE] = True
    base = update.operands[get_op(update.name).updates_operand or 0]
    analysis.classes.union(update.results[0], base)


class InPlaceUpdates(Pass):
    """Run functional updates (``A[i] = v``) in their operand's buffer where its old value is dead.

    Args:
        target: what the backend that runs the graph can do (which updates it runs in place,
            which ops return fresh arrays); the op definitions' traits when None.
    """

    name = "in-place-updates"

    def __init__(self, target: MemoryTarget | None = None):
        self.target = target or DEFAULT_TARGET

    def run(self, graph: Graph) -> bool:
        before = {op for op in graph.walk() if op.attrs.get(IN_PLACE_UPDATE)}
        copies = choose_in_place_updates(graph, self.target)
        after = {op for op in graph.walk() if op.attrs.get(IN_PLACE_UPDATE)}
        return bool(copies) or before != after
