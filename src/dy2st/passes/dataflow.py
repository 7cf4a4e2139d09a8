"""A forward "may be" analysis over structured control flow, to a fixed point.

Alias analysis (which values may share an input's buffer) asks this kind of question: a property
starts at some ops, flows through some others, and control flow forwards it: a ``cond`` result has it if either
branch yields a value that has it, and a ``while_loop`` result and its block arguments have it if
the initial value or the body's yielded value does. Loops feed their own arguments, so the walk
repeats until nothing changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from dy2st.ir.core import COND, WHILE_LOOP, Block, Graph, Op, Value

Transfer = Callable[[Op, set[Value]], Iterable[Value]]
"""``transfer(op, found)``: the values of a non-control-flow op that have the property, given the
values found so far (its results if an operand has it, say). Ops with regions other than
``cond``/``while_loop`` (fused groups) may also name their region's values."""


def may_have(graph: Graph | Block, transfer: Transfer, initial: Iterable[Value] = ()) -> set[Value]:
    """Every value that may have the property ``transfer`` describes (see the module docstring),
    in a graph or in one block and the blocks nested in it."""
    found: set[Value] = set(initial)
    top = graph.body if isinstance(graph, Graph) else graph

    def visit(block: Block) -> None:
        for op in block.ops:
            for region in op.regions:
                visit(region.block)
            if op.name == COND:
                for region in op.regions:
                    yielded = region.block.ops[-1].operands
                    found.update(r for r, v in zip(op.results, yielded) if v in found)
            elif op.name == WHILE_LOOP:
                _forward_loop(op, found)
            else:
                found.update(transfer(op, found))

    size = -1
    while size != len(found):
        size = len(found)
        visit(top)
    return found


def _forward_loop(op: Op, found: set[Value]) -> None:
    yielded = op.regions[1].block.ops[-1].operands
    for i, init in enumerate(op.operands):
        if init in found or yielded[i] in found:
            found.update((op.results[i], op.regions[0].block.args[i], op.regions[1].block.args[i]))
