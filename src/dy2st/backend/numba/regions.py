"""The ``compiled-regions`` pass: mark the loops and fused groups the compiled tier runs as
machine code.

Runs after the NumPy lowering (it reads the lowering's ``python_operator``, ``counted_loop`` and
``unfused``) and sets ``compiled_loop=True`` on each outermost ``while_loop`` that
``support.loop_compiles`` accepts (a loop it refuses may still hold inner loops it accepts), and
``compiled_kernel=True`` on each fused group ``support.fused_compiles`` accepts. Compiled loops
that follow one another in a block, with only constants between them (``D[i, 0] = i``, then
``D[0, j] = j``, then the table's loop nest), share a ``compiled_sequence=K`` number: one function
runs them all, a call (and its argument checks) instead of one per loop. The NumPy tier ignores
the attributes, so one optimized graph serves both tiers; ``dy2st dump --passes`` shows them.
"""

from __future__ import annotations

from dy2st.backend.numba.support import (
    COMPILED_KERNEL,
    COMPILED_LOOP,
    COMPILED_SEQUENCE,
    fused_compiles,
    loop_compiles,
)
from dy2st.ir.core import ANNOTATION_ATTRS, Block, Graph, Op
from dy2st.ir.opcodes import CONST, WHILE_LOOP, WRITES_BACK
from dy2st.passes.base import Pass

ANNOTATION_ATTRS.update((COMPILED_LOOP, COMPILED_KERNEL, COMPILED_SEQUENCE))
_MARKS = (COMPILED_LOOP, COMPILED_KERNEL, COMPILED_SEQUENCE)


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


def _number_sequences(block: Block, first: int) -> int:
    """Give each run of two or more compiled loops of ``block`` and of the blocks inside it, with
    only constants between them, a ``compiled_sequence`` number (from ``first``); return the next
    free number."""
    number = first
    run: list[Op] = []
    for op in [*block.ops, None]:
        if op is not None and op.name == CONST:
            continue
        if op is not None and op.attrs.get(COMPILED_LOOP):
            run.append(op)
            continue
        if len(run) > 1:
            for loop in run:
                loop.attrs[COMPILED_SEQUENCE] = number
            number += 1
        run = []
        if op is not None and not op.attrs.get(COMPILED_KERNEL):
            for region in op.regions:
                number = _number_sequences(region.block, number)
    return number


def _writes_arguments(graph: Graph) -> bool:
    """Does the graph update an argument in place (its return writes one back)?"""
    returned = graph.body.ops[-1]
    return any(index is not None for index in returned.attrs.get(WRITES_BACK, ()))


def compiled_loops(graph: Graph) -> list[Op]:
    """The loops the pass marked, outermost first."""
    return [op for op in graph.walk() if op.attrs.get(COMPILED_LOOP)]


def compiled_runs(graph: Graph) -> list[list[Op]]:
    """The loops the pass marked, grouped by the function that runs them: each sequence's loops
    together (in program order), each other loop alone."""
    runs: dict[object, list[Op]] = {}
    for op in compiled_loops(graph):
        runs.setdefault(op.attrs.get(COMPILED_SEQUENCE, op), []).append(op)
    return list(runs.values())


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
            for key in _MARKS:
                op.attrs.pop(key, None)
        _mark(graph.body, rerunnable=not _writes_arguments(graph))
        _number_sequences(graph.body, 0)
        return _marked(graph) != before


def _marked(graph: Graph) -> set[tuple[int, str, object]]:
    return {(id(op), key, op.attrs[key]) for op in graph.walk() for key in _MARKS if key in op.attrs}
