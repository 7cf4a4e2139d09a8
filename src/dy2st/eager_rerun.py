"""Calls that fail midway through a graph which updates its inputs.

Eager code that raises (an index out of bounds in a loop, an unassigned variable after a tensor
``if``) leaves every update it made before the error in the caller's arrays. A graph gives an
updated argument its final value when it returns, so an error midway would leave the argument
as it was, or half updated by in-place kernels. For a graph that updates inputs and has an op
that may raise when it runs, each call saves the arrays it updates; if the graph raises, they
are restored and the call runs the Python function instead, which raises the same error after
making the updates eager code makes (``RerunEagerly``). Graphs that print or draw random numbers
are left out: running them again would repeat what they did. So are graphs whose every update of
an input runs in place in the input's own buffer (the ``in-place-updates`` pass): the caller's
arrays then hold, when an op raises, what eager code's hold, and saving them would cost a copy
per call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dy2st.ir.core import COND, WHILE_LOOP, Graph, Value
from dy2st.ir.opdefs import get_op, op_may_raise, overwritten_operand


class RerunEagerly(Exception):
    """The graph raised after the caller's arrays were restored: run the Python function."""


def restoring_run(run: Callable[..., Any], graph: Graph, writebacks: dict[int, int]) -> Callable[..., Any]:
    """``run`` (an executor's), or, for a graph that updates inputs (``writebacks``: output index
    to input index) not all in place and may raise midway, ``run`` saving those inputs first and
    raising ``RerunEagerly`` with them restored."""
    if not writebacks or _all_in_place(graph, writebacks) or not _may_raise_midway(graph):
        return run
    written_inputs = sorted(set(writebacks.values()))

    def run_restoring(*inputs: Any) -> Any:
        saved = [(inputs[i], inputs[i].copy()) for i in written_inputs]
        try:
            return run(*inputs)
        except Exception:
            for array, before in saved:
                np.copyto(array, before)
            raise RerunEagerly from None

    return run_restoring


def _may_raise_midway(graph: Graph) -> bool:
    """Has ``graph`` an op that may raise when it runs, and no print or random draw?"""
    raising = False
    for op in graph.walk():
        opdef = get_op(op.name)
        if opdef.side_effect and not opdef.raises_when_run:
            return False
        raising = raising or op_may_raise(op)
    return raising


def _all_in_place(graph: Graph, writebacks: dict[int, int]) -> bool:
    """Is each written-back output the input's own buffer, made from it only by in-place updates,
    through the results of ``cond`` and ``while_loop`` ops? A worklist of (value, the buffer it
    must be) pairs, each checked once: the branches of a chain of ``cond`` ops (an unrolled loop
    holding an ``if``) reach the same values again and again, hundreds of ops deep."""
    returned = graph.body.ops[-1].operands
    pending = [(returned[out], graph.body.args[arg]) for out, arg in writebacks.items()]
    seen: set[tuple[Value, Value]] = set()
    while pending:
        value, target = pending.pop()
        if value is target or (value, target) in seen:
            continue
        seen.add((value, target))
        sources = _in_place_sources(value, target)
        if sources is None:
            return False
        pending.extend(sources)
    return True


def _in_place_sources(value: Value, target: Value) -> list[tuple[Value, Value]] | None:
    """The (value, buffer) pairs that must hold for ``value`` to be ``target``'s buffer updated in
    place, or None where it is not (a new array: a copy, a functional update)."""
    op = value.op
    if op is None:
        return None
    overwritten = overwritten_operand(op)
    if overwritten is not None:
        return [(op.operands[overwritten], target)]
    if op.name == WHILE_LOOP:
        body = op.regions[1].block
        i = value.index
        return [(op.operands[i], target), (body.ops[-1].operands[i], body.args[i])]
    if op.name == COND:
        return [(region.block.ops[-1].operands[value.index], target) for region in op.regions]
    return None
