"""Arrays a loop carries in buffers of their own, which it may rotate (double buffering).

``a, b = b, a`` at the end of a stencil's step (``runtime/control_flow/rotations.py``) makes the
loop yield its argument ``b``, updated in place, as ``a`` and its argument ``a`` as ``b``. Buffer
classes (``in_place.buffer_classes``) join a loop's initial value, arguments, yielded value and
result position by position, so the two positions end in one class: ``b[1:-1] = ...`` would then
seem to overwrite what ``a`` still holds, and the update would copy ``b`` (or check for overlap)
at every iteration. This module proves the opposite where it holds: the positions of a
*rotation group* hold pairwise disjoint buffers at every iteration, when

- the loop starts them from distinct arrays, each a graph argument the function updates in place
  (the caller runs the Python function when two such arguments overlap, ``Program.runs_eagerly``)
  or the result of an op that returns a new array (``MemoryTarget.returns_fresh``);
- and the body yields at each of them an array that comes from its argument at another (or the
  same) position of the group, each argument feeding one position (``carried_from``).

An array that "comes from" an argument is that argument's buffer or a new one: the argument
itself, a view of it, a functional update of it (in place, or a copy), the result of an inner
loop that hands back what it was given, or a ``copy_if_overlapping`` of it. By induction, what
the positions hold is pairwise disjoint at every iteration.
"""

from __future__ import annotations

from dy2st.ir.core import WHILE_LOOP, WRITES_BACK, Block, Graph, Op, Value
from dy2st.ir.opdefs import get_op, in_place_results
from dy2st.ops.indexing import COPY_IF_OVERLAPPING
from dy2st.passes.memory_plan import MemoryTarget


def arguments_carried_from(value: Value) -> list[Value]:
    """The block arguments ``value`` comes from, innermost first: the one ``carried_from`` gives,
    then, while that is the body argument of a loop that hands back what it was given there
    (an inner loop updating ``b[i]`` in place), the one that loop's initial value comes from."""
    chain: list[Value] = []
    argument = carried_from(value)
    while argument is not None and argument not in chain:
        chain.append(argument)
        region = argument.owner.parent if isinstance(argument.owner, Block) else None
        loop = region.parent if region is not None else None
        if loop is None or loop.name != WHILE_LOOP or region is not loop.regions[1]:
            break
        if carried_from(region.block.ops[-1].operands[argument.index]) is not argument:
            break
        argument = carried_from(loop.operands[argument.index])
    return chain


def carried_from(value: Value, seen: set[Value] | None = None) -> Value | None:
    """The block argument ``value`` comes from (its buffer, or a new one: module docstring), or
    None when it may come from anything else."""
    seen = set() if seen is None else seen
    while True:
        if value in seen:
            return None
        seen.add(value)
        owner = value.owner
        if isinstance(owner, Block):
            return value
        assert isinstance(owner, Op), "a value is a block argument or an op result"
        opdef = get_op(owner.name)
        index = owner.results.index(value)
        in_place = in_place_results(owner)
        if index in in_place:
            value = owner.operands[in_place[index]]
        elif opdef.updates_operand is not None and len(owner.results) == 1:
            value = owner.operands[opdef.updates_operand]
        elif opdef.view and owner.operands:
            value = owner.operands[0]
        elif owner.name == COPY_IF_OVERLAPPING:
            value = owner.operands[0]
        elif owner.name == WHILE_LOOP:
            body = owner.regions[1].block
            if carried_from(body.ops[-1].operands[index]) is not body.args[index]:
                return None
            value = owner.operands[index]
        else:
            return None


def rotation_group(loop: Op, written_arguments: set[int], graph_body: Block, target: MemoryTarget) -> set[int]:
    """The positions of ``loop`` that hold pairwise disjoint buffers at every iteration (the
    module docstring): empty unless at least two positions qualify."""
    body = loop.regions[1].block
    yielded = body.ops[-1].operands
    feeds: dict[int, int] = {}
    for position, value in enumerate(yielded):
        if value.type.ndim == 0:
            continue
        source = carried_from(value)
        if source is not None and source.owner is body:
            feeds[position] = source.index
    group = set(feeds)
    while True:  # keep the positions fed by a position of the group, each by one of its own
        sources = [feeds[position] for position in group]
        kept = {p for p in group if feeds[p] in group and sources.count(feeds[p]) == 1}
        kept = {p for p in kept if p in sources}
        if kept == group:
            break
        group = kept
    if len(group) < 2 or not _distinct_starts(
        [loop.operands[p] for p in sorted(group)], written_arguments, graph_body, target
    ):
        return set()
    return group


def _distinct_starts(values: list[Value], written_arguments: set[int], graph_body: Block, target: MemoryTarget) -> bool:
    """Are ``values`` distinct arrays that share no memory: graph arguments the function updates
    in place, or results of ops that return new arrays?"""
    if len(set(values)) != len(values):
        return False
    for value in values:
        owner = value.owner
        if owner is graph_body:
            if value.index not in written_arguments:
                return False
        elif not isinstance(owner, Op) or not target.returns_fresh(owner) or in_place_results(owner):
            return False
    return True


def written_arguments(graph: Graph) -> set[int]:
    """Indices of the graph arguments the function updates in place (written back after a call)."""
    terminator = graph.body.terminator
    targets = terminator.attrs.get(WRITES_BACK, ()) if terminator is not None else ()
    return {index for index in targets if index is not None}


class RotationGroups:
    """The rotation groups of a graph's loops, found when first asked about."""

    def __init__(self, graph: Graph, target: MemoryTarget):
        self.graph = graph
        self.target = target
        self.written = written_arguments(graph)
        self._groups: dict[Op, set[int]] = {}

    def apart(self, value: Value, other: Value) -> bool:
        """Do ``value`` and ``other`` come from two positions of one rotation group (so they share
        no memory although buffer classes join them)?"""
        theirs = {argument.owner: argument for argument in arguments_carried_from(other)}
        for mine in arguments_carried_from(value):
            match = theirs.get(mine.owner)
            if match is None:
                continue
            if match is mine:
                return False  # the same argument: the same buffer, or a new one made from it
            region = mine.owner.parent if isinstance(mine.owner, Block) else None
            loop = region.parent if region is not None else None
            if loop is None or loop.name != WHILE_LOOP or region is not loop.regions[1]:
                return False
            if loop not in self._groups:
                self._groups[loop] = rotation_group(loop, self.written, self.graph.body, self.target)
            return mine.index in self._groups[loop] and match.index in self._groups[loop]
        return False
