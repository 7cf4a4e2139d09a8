"""The ``compiled-regions`` pass: mark the loops the compiled tier runs as machine code.

Runs after the NumPy lowering (it reads the lowering's ``python_operator`` and ``counted_loop``)
and sets ``compiled_loop=True`` on each outermost ``while_loop`` that ``support.loop_compiles``
accepts; a loop it refuses may still hold inner loops it accepts. The NumPy tier ignores the
attribute, so one optimized graph serves both tiers; ``dy2st dump --passes`` shows it.
"""

from __future__ import annotations

from dy2st.backend.numba.support import COMPILED_LOOP, loop_compiles
from dy2st.ir.core import ANNOTATION_ATTRS, Block, Graph, Op
from dy2st.ir.opcodes import WHILE_LOOP
from dy2st.passes.base import Pass

ANNOTATION_ATTRS.add(COMPILED_LOOP)


def _mark(block: Block) -> None:
    for op in block.ops:
        if op.name == WHILE_LOOP and loop_compiles(op):
            op.attrs[COMPILED_LOOP] = True
            continue
        for region in op.regions:
            _mark(region.block)


def compiled_loops(graph: Graph) -> list[Op]:
    """The loops the pass marked, outermost first."""
    return [op for op in graph.walk() if op.attrs.get(COMPILED_LOOP)]


class CompiledRegions(Pass):
    """Mark the loops the compiled tier compiles (``compiled_loop=True``)."""

    name = "compiled-regions"

    def run(self, graph: Graph) -> bool:
        before = {id(op) for op in compiled_loops(graph)}
        for op in graph.walk():
            op.attrs.pop(COMPILED_LOOP, None)
        _mark(graph.body)
        return {id(op) for op in compiled_loops(graph)} != before
