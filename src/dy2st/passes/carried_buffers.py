"""Arrays a loop carries in buffers of their own, which it may rotate (double buffering).

``a, b = b, a`` at the end of a stencil's step (``runtime/control_flow/rotations.py``) makes the
loop yield its argument ``b``, updated in place, as ``a`` and its argument ``a`` as ``b``. Buffer
classes (``in_place.buffer_classes``) join a loop's initial value, arguments, yielded value and
result position by position, so the two positions end in one class: ``b[1:-1] = ...`` would then
seem to overwrite what ``a`` still holds, and the update would copy ``b`` (or check for overlap)
at every iteration. This module proves the opposite where it holds: the positions of a
*rotation group* hold pairwise disjoint buffers at every iteration, when

- the loop *permutes* them: the body yields at each an array that comes from its argument at
  another (or the same) position of the group, each argument feeding one position
  (``RotationGroups.permuting``);
- and the loop starts them from distinct arrays: results of ops that return new arrays
  (``MemoryTarget.returns_fresh``, or made from no array: ``np.zeros_like``), and either graph
  arguments the function updates in place (the caller runs the Python function when two such
  arguments overlap, ``Program.runs_eagerly``) or arguments of one enclosing loop at positions of
  its own rotation group.

An array that "comes from" an argument (``RotationGroups.root``) is that argument's buffer or a
new one: the argument itself, a view of it, a functional update of it (in place, or a copy), a
``copy_if_overlapping`` of it, or the result of an inner loop that hands back what it was given.
By induction, what the positions hold is pairwise disjoint at every iteration, and so are the
loop's results there.

Loops nest: an inner loop that permutes arrays coming from an outer loop's arguments (a stencil's
time steps inside an outer iteration) ends with those arrays in some order, so the outer loop's
yields may come from its results, each inner loop's results counting as one set of sources. That
a loop permutes is structural and asks only about the loops inside it; that its starts are
distinct asks only about the loops around it: neither question comes back.
"""

from __future__ import annotations

from dy2st.ir.core import CONST, WHILE_LOOP, WRITES_BACK, Block, Graph, Op, Value
from dy2st.ir.opdefs import get_op, in_place_results
from dy2st.ops.indexing import COPY_IF_OVERLAPPING
from dy2st.passes.memory_plan import MemoryTarget


def written_arguments(graph: Graph) -> set[int]:
    """Indices of the graph arguments the function updates in place (written back after a call)."""
    terminator = graph.body.terminator
    targets = terminator.attrs.get(WRITES_BACK, ()) if terminator is not None else ()
    return {index for index in targets if index is not None}


def _loop_of_body(block: Block) -> Op | None:
    """The loop whose body ``block`` is, if any."""
    region = block.parent
    loop = region.parent if region is not None else None
    return loop if loop is not None and loop.name == WHILE_LOOP and region is loop.regions[1] else None


class RotationGroups:
    """The rotation groups of a graph's loops (module docstring), found when first asked about."""

    def __init__(self, graph: Graph, target: MemoryTarget):
        self.graph = graph
        self.target = target
        self.written = written_arguments(graph)
        self._groups: dict[Op, frozenset[int]] = {}
        self._permuting: dict[Op, frozenset[int]] = {}

    # --- where a value's buffer comes from ------------------------------------------------------
    def root(self, value: Value) -> Value | None:
        """The block argument, or the result of a loop at a position of its rotation group, that
        ``value`` comes from (its buffer, or a new one), or None when it may come from anything
        else."""
        seen: set[Value] = set()
        while value not in seen:
            seen.add(value)
            owner = value.owner
            if isinstance(owner, Block):
                return value
            assert isinstance(owner, Op), "a value is a block argument or an op result"
            index = owner.results.index(value)
            if owner.name == WHILE_LOOP:
                body = owner.regions[1].block
                if self.root(body.ops[-1].operands[index]) is body.args[index]:
                    value = owner.operands[index]  # handed back as it was given
                    continue
                return value if index in self.permuting(owner) else None
            following = _operand_shared(owner, index)
            if following is None:
                return None
            value = following
        return None

    def roots(self, value: Value) -> list[Value]:
        """``root(value)``, then, while that is the body argument of a loop that hands back what it
        was given there (an inner loop updating ``b[i]`` in place), the root of that loop's
        initial value."""
        chain: list[Value] = []
        current = self.root(value)
        while current is not None and current not in chain:
            chain.append(current)
            loop = _loop_of_body(current.owner) if isinstance(current.owner, Block) else None
            if loop is None or self.root(loop.regions[1].block.ops[-1].operands[current.index]) is not current:
                break
            current = self.root(loop.operands[current.index])
        return chain

    def apart(self, value: Value, other: Value) -> bool:
        """Do ``value`` and ``other`` come from two positions of one rotation group (so they share
        no memory although buffer classes join them)?"""
        theirs = {id(root.owner): root for root in self.roots(other)}
        for mine in self.roots(value):
            match = theirs.get(id(mine.owner))
            if match is None:
                continue
            if match is mine:
                return False  # the same buffer, or a new one made from it
            loop = _loop_of_body(mine.owner) if isinstance(mine.owner, Block) else mine.owner
            if not isinstance(loop, Op) or loop.name != WHILE_LOOP:
                return False
            group = self.group(loop)
            return mine.index in group and match.index in group
        return False

    # --- rotation groups --------------------------------------------------------------------------
    def group(self, loop: Op) -> frozenset[int]:
        """The positions of ``loop`` that hold pairwise disjoint buffers at every iteration: those
        it permutes (``permuting``), when it starts them from distinct arrays."""
        if loop not in self._groups:
            positions = self.permuting(loop)
            distinct = self._distinct_starts([loop.operands[p] for p in sorted(positions)])
            self._groups[loop] = positions if len(positions) >= 2 and distinct else frozenset()
        return self._groups[loop]

    def permuting(self, loop: Op) -> frozenset[int]:
        """The positions whose yielded arrays come from the arguments at those positions, each
        argument's buffer going to one position (or made anew): whatever the loop starts them
        from, it ends with those arrays, in some order. Inner loops are asked first (they are
        nested in the body), so the question never comes back to ``loop``."""
        if loop in self._permuting:
            return self._permuting[loop]
        body = loop.regions[1].block
        sources: dict[int, tuple[Op | None, frozenset[int]]] = {}
        for position, value in enumerate(body.ops[-1].operands):
            if value.type.ndim:
                found = self._sources(value, body)
                if found is not None:
                    sources[position] = found
        group = set(sources)
        while True:  # keep the positions fed from positions of the group, each by one source set
            kept = {p for p in group if sources[p][1] <= group and self._feeds_once(p, group, sources)}
            used = set().union(*(sources[p][1] for p in kept)) if kept else set()
            kept = {p for p in kept if p in used}
            if kept == group:
                break
            group = kept
        self._permuting[loop] = frozenset(group)
        return self._permuting[loop]

    def _sources(self, value: Value, body: Block) -> tuple[Op | None, frozenset[int]] | None:
        """Where a value the body yields comes from: one of its arguments (None, {index}), or the
        results of an inner loop that rotates arrays coming from its arguments (that loop, the
        arguments' indices)."""
        root = self.root(value)
        if root is None:
            return None
        if root.owner is body:
            return None, frozenset({root.index})
        inner = root.owner
        if not isinstance(inner, Op) or inner.parent is not body:
            return None
        starts = [self.root(inner.operands[j]) for j in self.permuting(inner)]
        if any(start is None or start.owner is not body for start in starts):
            return None
        return inner, frozenset(start.index for start in starts if start is not None)

    @staticmethod
    def _feeds_once(position: int, group: set[int], sources: dict[int, tuple[Op | None, frozenset[int]]]) -> bool:
        """Does no other position of the group take ``position``'s sources (an inner loop's
        results count once, at as many positions as the loop has sources)?"""
        token, mine = sources[position]
        sharing = [p for p in group if sources[p][1] & mine]
        if token is None:
            return sharing == [position]
        return len(sharing) == len(mine) and all(sources[p] == (token, mine) for p in sharing)

    def _distinct_starts(self, values: list[Value]) -> bool:
        """Are ``values`` distinct arrays that share no memory: results of ops that return new
        arrays (``_new_array``), and arrays that come (``root``) from distinct places of one
        source: graph arguments the function updates in place, the arguments of one enclosing
        loop at positions of its rotation group, or the results of one earlier loop at positions
        of its rotation group (two loops swapping the same buffers one after the other)?"""
        roots: list[Value] = []
        sources = set()
        for value in values:
            if isinstance(value.owner, Op) and _new_array(value.owner, self.target):
                continue
            root = self.root(value)
            if root is None:
                return False
            owner = root.owner
            if owner is self.graph.body:
                if root.index not in self.written:
                    return False
            elif isinstance(owner, Block):
                loop = _loop_of_body(owner)
                if loop is None or root.index not in self.group(loop):
                    return False
            elif root.index not in self.group(owner):
                return False
            roots.append(root)
            sources.add(id(owner))
        return len(set(roots)) == len(roots) and len(sources) <= 1


def _operand_shared(op: Op, index: int) -> Value | None:
    """The operand whose buffer ``op``'s result ``index`` is or views, for an op whose result is
    that buffer or a new one: a view, an update (in place or a copy), an overlap check."""
    in_place = in_place_results(op)
    opdef = get_op(op.name)
    if index in in_place:
        return op.operands[in_place[index]]
    if opdef.updates_operand is not None and len(op.results) == 1:
        return op.operands[opdef.updates_operand]
    if (opdef.view or op.name == COPY_IF_OVERLAPPING) and op.operands:
        return op.operands[0]
    return None


def _new_array(op: Op, target: MemoryTarget) -> bool:
    """Does ``op`` make a new array: one that returns fresh arrays and runs in none of its
    operands' buffers, or one made from no array (``np.zeros_like``, ``np.empty``: ``full``,
    ``empty``), other than a constant the graph keeps across calls?"""
    if in_place_results(op) or op.name == CONST:
        return False
    return target.returns_fresh(op) or not any(operand.type.ndim for operand in op.operands)
