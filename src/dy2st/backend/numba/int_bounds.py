"""Bounds on the size of the Python ints a loop computes from array sizes and loop counters.

Compiled code holds Python ints in 64 bits. A function that updates its arguments cannot be run
again on the NumPy tier once such an int outgrows them, so ``support.loop_compiles`` keeps its
loops on the NumPy tier where an int may grow: a product, a shift, a sum of two values. Sums,
differences and products of sizes, counters and literals cannot grow that far (``range(i, n)``
counts ``n - i`` steps, ``max(n - i, 0)`` is ``(c + abs(c)) // 2``, ``range(n - 2, 0, -1)``
counts down as ``n - 2 + i * -1``): ``int_bits`` bounds the bits of such a value.
"""

from __future__ import annotations

from dy2st.backend.numpy.lowering import loop_comparison
from dy2st.ir.core import Block, Op, Value
from dy2st.ir.opcodes import AS_PYTHON_NUMBER, CONST, DIM, WHILE_LOOP
from dy2st.passes.loop_indices import literal_int, steps_by_one

# No array has 2**48 elements; a loop counting to a size stays below it.
SIZE_BITS = 48
# An int of at most this many bits is far from the ends of int64.
SAFE_BITS = 62
# Deeper chains of arithmetic are not followed (an unknown bound).
_MOST_STEPS = 64


def int_bits(value: Value, known: dict[Value, int | None] | None = None) -> int | None:
    """An upper bound on the bits of the Python int ``value`` (its magnitude), or None when
    nothing bounds it: a literal, an array size, a counted loop's counter, and sums, differences,
    products, ``abs``, floor divisions by positive literals and left shifts by literals of those."""
    known = {} if known is None else known
    if value not in known:
        known[value] = None  # a cycle through a loop's carried values bounds nothing
        known[value] = _bits(value, known, len(known))
    return known[value]


def _bits(value: Value, known: dict[Value, int | None], steps: int) -> int | None:
    if steps > _MOST_STEPS:
        return None
    owner = value.owner
    if isinstance(owner, Block):
        return _counter_bits(value, owner, known)
    if not isinstance(owner, Op):
        return None
    if owner.name == CONST:
        constant = literal_int(value)
        return None if constant is None else max(1, abs(constant).bit_length())
    if owner.name == DIM:
        return SIZE_BITS
    if owner.name == AS_PYTHON_NUMBER:
        return int_bits(owner.operands[0], known)
    if owner.name == WHILE_LOOP:
        return _counter_bits(owner.regions[1].block.args[value.index], owner.regions[1].block, known)
    return _operator_bits(owner, known)


def _operator_bits(op: Op, known: dict[Value, int | None]) -> int | None:
    symbol = op.attrs.get("python_operator")
    if symbol is None or not all(v.type.weak and v.type.dtype.kind in "iu" for v in op.operands):
        return None
    bits = [int_bits(v, known) for v in op.operands]
    if any(b is None for b in bits):
        return None
    widths = [b for b in bits if b is not None]
    if symbol in ("+", "-"):
        return max(widths) + (1 if len(widths) == 2 else 0)
    if symbol == "abs":
        return widths[0]
    if symbol == "*":  # a reversed range's ``start + i * -1``
        return sum(widths)
    shift = literal_int(op.operands[1]) if symbol == "<<" else None
    if shift is not None and shift >= 0:
        return widths[0] + shift
    if symbol in ("//", "%") and (literal_int(op.operands[1]) or 0) > 0:
        return widths[0]
    return None


def _counter_bits(value: Value, block: Block, known: dict[Value, int | None]) -> int | None:
    """The bits of a counted loop's counter: it starts at its initial value and steps by one
    while below the loop's bound, so it stays within the larger of the two."""
    region = block.parent
    loop = region.parent if region is not None else None
    if loop is None or loop.name != WHILE_LOOP or not steps_by_one(loop, value.index):
        return None
    compare = loop_comparison(loop.regions[0].block)
    if compare is None or compare.operands[0] is not loop.regions[0].block.args[value.index]:
        return None
    start, bound = int_bits(loop.operands[value.index], known), int_bits(compare.operands[1], known)
    if start is None or bound is None:
        return None
    return max(start, bound)
