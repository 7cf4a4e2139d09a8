"""Which arrays a compiled loop may compute into buffers it reuses from one iteration to the next.

A loop body that makes small arrays (``h = np.tanh(x[i] @ Wx + h @ Wh + b)``) allocated each of
them anew at every iteration. The element loops, matrix products and gathers ``loop_source`` writes out
compute into buffers allocated once, before the loop, instead. A buffer may be overwritten only
when the value it held is dead:

- a value the iteration does not hand on (not carried to the next iteration, nor out of the loop,
  through any alias) is dead at the end of its iteration: one buffer serves every iteration
  (``SINGLE``);
- a value carried to the next iteration is still read there, before and after the op making the
  next one runs: two buffers, used in turn (``DOUBLE``), as long as the carried value itself is
  not carried on once more (``prev = h; h = f(h)`` would need three);
- anything else, or where the aliases cannot be followed (an inner loop's results), gets a new
  array at every iteration (``FRESH``), as before.

Aliases are followed conservatively: a view, an in-place store (of the array stored into: the
value stored is copied), a ``cond`` result and a fused group's passed-through argument may be the
array they come from.
"""

from __future__ import annotations

import enum

from dy2st.backend.numba.support import compiled_gather, reduces_into_new_array, small_matmul
from dy2st.ir.core import Block, Op, Value
from dy2st.ir.opcodes import COND, WHILE_LOOP
from dy2st.ir.opdefs import get_op, reads_element, stores_element
from dy2st.ops.fused import FUSED
from dy2st.ops.indexing import COPY_IF_OVERLAPPING


class Reuse(enum.Enum):
    """How the op making an array finds the memory for it at each iteration."""

    SINGLE = "one buffer for every iteration"
    DOUBLE = "two buffers, used in turn"
    FRESH = "a new array at every iteration"


# Stands for "any array": the sources of an inner loop's results are not followed.
_ANY = object()


def reuse_plans(loop: Op, made: list[Value]) -> dict[Value, Reuse]:
    """The reuse of each array in ``made``: arrays the ops of ``loop``'s body make (not inside an
    inner loop), each the result of an op that runs once per iteration at most."""
    body = loop.regions[1].block
    yielded = body.ops[-1].operands
    memo: dict[Value, frozenset[object]] = {}
    sources = [_sources(value, memo) for value in yielded]
    handed_on = set().union(*sources)
    plans = {}
    for value in made:
        if _ANY in handed_on:
            plans[value] = Reuse.FRESH
        elif value not in handed_on:
            plans[value] = Reuse.SINGLE
        else:
            slots = [k for k, found in enumerate(sources) if value in found]
            # A slot's array handed on again: the value of two iterations back may still be live.
            twice = any(body.args[k] in handed_on for k in slots)
            plans[value] = Reuse.FRESH if twice else Reuse.DOUBLE
    return plans


def owned_ops(loop: Op) -> list[Op]:
    """The ops of ``loop``'s body, inside ``cond``s too but not inside inner loops or fused groups."""
    found: list[Op] = []
    _collect(loop.regions[1].block, found)
    return found


def _collect(block: Block, found: list[Op]) -> None:
    for op in block.ops:
        found.append(op)
        if op.name == COND:
            for region in op.regions:
                _collect(region.block, found)


def _sources(value: Value, memo: dict[Value, frozenset[object]]) -> frozenset[object]:
    """The arrays ``value`` may be (itself, or arrays it aliases), ``_ANY`` where not followed."""
    if value.type.ndim == 0:
        return frozenset()
    found = memo.get(value)
    if found is None:
        found = memo[value] = frozenset({value, *_aliased(value, memo)})
    return found


def _aliased(value: Value, memo: dict[Value, frozenset[object]]) -> set[object]:
    """The arrays other than itself that ``value`` may be."""
    owner = value.owner
    if not isinstance(owner, Op) or _makes_new_array(owner):
        return set()  # a block argument, or new memory
    if owner.name == WHILE_LOOP:
        return {_ANY}
    found: set[object] = set()
    if owner.name == COND:
        index = owner.results.index(value)
        for region in owner.regions:
            found |= _sources(region.block.ops[-1].operands[index], memo)
    elif stores_element(owner) or owner.name == COPY_IF_OVERLAPPING:
        found |= _sources(owner.operands[0], memo)  # the array stored into; the value is copied in
    elif owner.name == FUSED:
        block = owner.regions[0].block
        passed = block.ops[-1].operands[owner.results.index(value)]
        if passed in block.args:
            found |= _sources(owner.operands[block.args.index(passed)], memo)
    elif stores_element(owner):
        found |= _sources(owner.operands[0], memo)  # the updated array; the stored value is copied
    else:
        for operand in owner.operands:
            found |= _sources(operand, memo)
    return found


def _makes_new_array(op: Op) -> bool:
    """Is ``op``'s array result new memory (a ufunc's, a product's or a gather's), no view of an operand?"""
    if compiled_gather(op):
        return True
    if reads_element(op) or stores_element(op):
        return False
    return get_op(op.name).ufunc is not None or small_matmul(op) or reduces_into_new_array(op)
