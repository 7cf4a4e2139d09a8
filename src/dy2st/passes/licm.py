"""Loop-invariant code motion: compute once, before a ``while_loop``, what every iteration repeats.

Before::

    %h, %i = while_loop (%h0, %i0) : (f32[32], i64[])
        cond (%h_1: f32[32], %i_1: i64[]) { ... }
    } body (%h_2: f32[32], %i_2: i64[]) {
      %0 = transpose %W {axes=(1, 0)} : f32[32,32]     # reads only %W, defined outside
      %1 = matmul %0, %h_2 : f32[32]
      ...
    }

After: ``%0`` sits just before the ``while_loop``, and so does anything computed only from it.

An op moves when every operand is defined outside the loop (or by an op that moved), it has no side
effects and no regions, it cannot raise at run time, and it does not make an uninitialized array.
Both the condition and the body region are hoisted from (the condition's invariants, like a
tolerance ``1e-12 * a``, would otherwise run at every test); ``cond`` branches are never hoisted
from, since that would run the work of the branch not taken. Nested loops are processed innermost
first, so an op can climb out of several loops.

A hoisted op runs even when the loop runs zero times. Ops that can raise at run time (indexing with
tensor indices) therefore stay in the loop. Arithmetic that merely warns in NumPy (division by
zero) may then warn for a loop that never ran; we accept that, since no value the user sees changes.
"""

from __future__ import annotations

from dy2st.ir.core import TERMINATORS, WHILE_LOOP, Block, Graph, Op, Value
from dy2st.ir.opdefs import get_op, op_may_raise
from dy2st.passes.base import Pass


class LoopInvariantCodeMotion(Pass):
    """Hoist loop-invariant ops out of ``while_loop`` bodies."""

    name = "licm"

    def run(self, graph: Graph) -> bool:
        return hoist_loop_invariants(graph)


def hoist_loop_invariants(graph: Graph) -> bool:
    """Move invariant ops before their loops, innermost loops first; return whether any moved."""
    return _hoist_in_block(graph.body)


def _hoist_in_block(block: Block) -> bool:
    changed = False
    new_ops: list[Op] = []
    for op in block.ops:
        for region in op.regions:
            changed |= _hoist_in_block(region.block)
        if op.name == WHILE_LOOP:
            # The condition runs at least once, so its invariants are hoisted as safely as the
            # body's (Newton's ``1e-12 * a`` in ``while abs(x * x - a) > 1e-12 * a``).
            hoisted = _take_invariants(op.regions[0].block) + _take_invariants(op.regions[1].block)
            new_ops.extend(hoisted)
            changed |= bool(hoisted)
        new_ops.append(op)
    if changed:
        block.set_ops(new_ops)
    return changed


def can_hoist(op: Op) -> bool:
    """True for ops that may run before the loop: no effects, no regions, cannot raise."""
    if op.name in TERMINATORS or op.regions:
        return False
    opdef = get_op(op.name)
    if opdef.side_effect:
        return False
    if opdef.uninitialized:
        # A fresh uninitialized array (an inner loop's tape) costs nothing to make at each
        # iteration; made once before the loop, the in-place pass would copy it at each one to
        # keep it unchanged for the next.
        return False
    # Indexing that may raise (tensor indices, static ones out of bounds) runs only where eager
    # code would: hoisted, it would raise before a loop that runs zero times.
    return not op_may_raise(op)


def _take_invariants(body: Block) -> list[Op]:
    """Remove and return, in order, the body ops whose operands do not change across iterations."""
    variant: set[Value] = set(body.args)
    hoisted: list[Op] = []
    kept: list[Op] = []
    for op in body.ops:
        reads = {v for inner in op.walk() for v in inner.operands}
        if can_hoist(op) and not reads & variant:
            hoisted.append(op)
            continue
        kept.append(op)
        variant.update(op.results)
    if hoisted:
        body.set_ops(kept)
    return hoisted
