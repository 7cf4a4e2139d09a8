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

from dy2st.ir.core import COND, CONST, WHILE_LOOP, Graph, Value
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
    through the results of ``cond`` and ``while_loop`` ops? A loop that swaps buffers (``a, b =
    b, a``) hands back each of them at a position chosen when it runs: there, each output may be
    any of the written inputs' buffers, all updated in place as eager code updates them. A
    worklist of (value, the buffers it must be one of) pairs, each checked once: the branches of a
    chain of ``cond`` ops (an unrolled loop holding an ``if``) reach the same values again and
    again, hundreds of ops deep."""
    returned = graph.body.ops[-1].operands
    written = frozenset(graph.body.args[arg] for arg in writebacks.values())
    pending = [(returned[out], frozenset({graph.body.args[arg]})) for out, arg in writebacks.items()]
    seen: set[tuple[Value, frozenset[Value]]] = set()
    while pending:
        value, targets = pending.pop()
        if value in targets or (value, targets) in seen:
            continue
        seen.add((value, targets))
        sources = _in_place_sources(value, targets, written)
        if sources is None:
            return False
        pending.extend(sources)
    return True


def _in_place_sources(
    value: Value, targets: frozenset[Value], written: frozenset[Value]
) -> list[tuple[Value, frozenset[Value]]] | None:
    """The (value, buffers) pairs that must hold for ``value`` to be one of the buffers
    ``targets``, updated in place, or None where it is not (a new array: a copy, a functional
    update). ``written``: the inputs the graph writes back."""
    op = value.op
    if op is None:
        return None
    overwritten = overwritten_operand(op)
    if overwritten is not None:
        return [(op.operands[overwritten], targets)]
    if op.name == WHILE_LOOP:
        body = op.regions[1].block
        i = value.index
        source = _argument_updated(body.ops[-1].operands[i], body)
        if source is None or source is body.args[i]:
            # Not a swap: the yield must be the argument's buffer, followed as any value is
            # (through inner loops and ifs, which ``_argument_updated`` does not follow).
            return [(op.operands[i], targets), (body.ops[-1].operands[i], frozenset({body.args[i]}))]
        return _swapped_sources(op, i, written)
    if op.name == COND:
        return [(region.block.ops[-1].operands[value.index], targets) for region in op.regions]
    return None


def _swapped_sources(loop: Any, index: int, written: frozenset[Value]) -> list[tuple[Value, frozenset[Value]]] | None:
    """For result ``index`` of a loop that swaps buffers: the positions whose yields come, by
    in-place updates, from arguments at those positions (starting from ``index``) must each
    start from a written input (or a new array) and yield one of those arguments' buffers."""
    body = loop.regions[1].block
    yielded = body.ops[-1].operands
    positions, todo = {index}, [index]
    while todo:
        source = _argument_updated(yielded[todo.pop()], body)
        if source is None:
            return None
        if source.index not in positions:
            positions.add(source.index)
            todo.append(source.index)
    arguments = frozenset(body.args[p] for p in positions)
    starts = [loop.operands[p] for p in positions]
    # A new array the function made (``b = np.zeros_like(a)``) is no caller's to restore.
    callers = [start for start in starts if not _new_array(start)]
    return [(start, written) for start in callers] + [(yielded[p], arguments) for p in positions]


def _argument_updated(value: Value, body: Any) -> Value | None:
    """The argument of ``body`` that ``value`` is, through in-place updates, or None."""
    while value.op is not None:
        overwritten = overwritten_operand(value.op)
        if overwritten is None:
            return None
        value = value.op.operands[overwritten]
    return value if value.owner is body else None


def _new_array(value: Value) -> bool:
    """Is ``value`` a new array an op made: one that returns fresh arrays, or one made from no
    array (``np.zeros_like``: ``full``), not a constant the graph keeps across calls?"""
    op = value.op
    if op is None or op.name == CONST or overwritten_operand(op) is not None:
        return False
    return get_op(op.name).returns_fresh or not any(operand.type.ndim for operand in op.operands)
