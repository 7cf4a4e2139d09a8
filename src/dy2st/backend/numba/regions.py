"""The ``compiled-regions`` pass: mark the loops and fused groups the compiled tier runs as
machine code.

Runs after the NumPy lowering (it reads the lowering's ``python_operator``, ``counted_loop`` and
``unfused``) and sets ``compiled_loop=True`` on each outermost ``while_loop`` that
``support.loop_compiles`` accepts (a loop it refuses may still hold inner loops it accepts), and
``compiled_kernel=True`` on each fused group ``support.fused_compiles`` accepts. The NumPy tier ignores the
attribute, so one optimized graph serves both tiers; ``dy2st dump --passes`` shows it.
"""

from __future__ import annotations

from dy2st.backend.numba.support import COMPILED_KERNEL, COMPILED_LOOP, fused_compiles, loop_compiles
from dy2st.ir.core import ANNOTATION_ATTRS, Block, Graph, Op
from dy2st.ir.opcodes import WHILE_LOOP, WRITES_BACK
from dy2st.passes.base import Pass

ANNOTATION_ATTRS.update((COMPILED_LOOP, COMPILED_KERNEL))


def _mark(block: Block, rerunnable: bool) -> None:
    for op in block.ops:
        if op.name == WHILE_LOOP and loop_compiles(op, rerunnable):
            op.attrs[COMPILED_LOOP] = True
            continue
        if fused_compiles(op):
            op.attrs[COMPILED_KERNEL] = True
            continue
        for region in op.regions:
            _mark(region.block, rerunnable)


def _writes_arguments(graph: Graph) -> bool:
    """Does the graph update an argument in place (its return writes one back)?"""
    returned = graph.body.ops[-1]
    return any(index is not None for index in returned.attrs.get(WRITES_BACK, ()))


def compiled_loops(graph: Graph) -> list[Op]:
    """The loops the pass marked, outermost first."""
    return [op for op in graph.walk() if op.attrs.get(COMPILED_LOOP)]


def compiled_kernels(graph: Graph) -> list[Op]:
    """The fused groups the pass marked."""
    return [op for op in graph.walk() if op.attrs.get(COMPILED_KERNEL)]


class CompiledRegions(Pass):
    """Mark the loops (``compiled_loop=True``) and fused groups (``compiled_kernel=True``) the
    compiled tier compiles."""

    name = "compiled-regions"

    def run(self, graph: Graph) -> bool:
        before = _marked(graph)
        for op in graph.walk():
            op.attrs.pop(COMPILED_LOOP, None)
            op.attrs.pop(COMPILED_KERNEL, None)
        _mark(graph.body, rerunnable=not _writes_arguments(graph))
        return _marked(graph) != before


def _marked(graph: Graph) -> set[tuple[int, str]]:
    return {(id(op), key) for op in graph.walk() for key in (COMPILED_LOOP, COMPILED_KERNEL) if op.attrs.get(key)}
