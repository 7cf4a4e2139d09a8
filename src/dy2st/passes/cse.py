"""Common subexpression elimination: compute each distinct expression once.

Before::

    %0 = add %x, %W : f32[3]
    %1 = multiply %0, 2.0 : f32[3]
    %2 = add %x, %W : f32[3]
    %3 = multiply %2, 2.0 : f32[3]
    %4 = add %1, %3 : f32[3]

After: ``%2`` and ``%3`` are gone and ``%4 = add %1, %1``.

Two ops are the same expression when they have the same opcode, the same operands (in either order
for commutative ops such as ``add``), equal attributes and equal result types. Attributes compare
strictly (``ir.attribute_keys``): arrays by dtype, shape and bytes, floats by their bits (so ``0.0``
and ``-0.0`` differ and a NaN equals itself), ``1`` and ``True`` differ.
Ops with side effects or regions are never merged, nor ops that make a new array from their
attributes alone (``np.zeros(3)`` twice is two arrays, which may be updated in place apart).
Scoping follows dominance: a value computed in an enclosing block can stand in for one inside a
region, never the other way round, and the two branches of a ``cond`` do not share their
expressions.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Hashable

from dy2st.ir.attribute_keys import UnhashableAttribute, attributes_key
from dy2st.ir.core import CONST, TERMINATORS, Block, Graph, Op, Value
from dy2st.ir.opdefs import get_op
from dy2st.passes.base import Pass


class CommonSubexpressionElimination(Pass):
    """Merge ops that compute the same expression, and equal constants."""

    name = "cse"

    def run(self, graph: Graph) -> bool:
        return eliminate_common_subexpressions(graph)


def eliminate_common_subexpressions(graph: Graph) -> bool:
    """Merge repeated expressions in ``graph``; return whether anything was merged."""
    replacements: dict[Value, Value] = {}
    _cse_block(graph.body, ChainMap(), replacements)
    return bool(replacements)


def _cse_block(block: Block, available: ChainMap, replacements: dict[Value, Value]) -> None:
    """Walk ``block`` in program order; ``available`` maps expression keys to earlier results."""
    kept: list[Op] = []
    for op in block.ops:
        op.operands = [replacements.get(v, v) for v in op.operands]
        for region in op.regions:
            # A fresh child scope per region: its expressions must not leak to siblings or out.
            _cse_block(region.block, available.new_child(), replacements)
        key = expression_key(op)
        if key is not None:
            earlier = available.get(key)
            if earlier is not None:
                replacements.update(zip(op.results, earlier.results))
                continue
            available[key] = op
        kept.append(op)
    if len(kept) != len(block.ops):
        block.set_ops(kept)


def expression_key(op: Op) -> Hashable | None:
    """A hashable key equal for ops computing the same thing, or None if ``op`` must stay."""
    if op.name in TERMINATORS or op.regions or not op.results:
        return None
    if not op.operands and op.name != CONST:
        # A new array made from attributes alone (np.zeros(n), np.arange(n)): eager code makes one
        # per call, and an in-place update of one of them may then write it without a copy.
        # Merged, every update but the last would copy, and the arrays' views would seem related.
        return None
    if get_op(op.name).side_effect:
        return None
    try:
        attrs = attributes_key(op)
    except UnhashableAttribute:
        return None
    operands = tuple(op.operands)
    if get_op(op.name).commutative and len(operands) == 2 and not attrs:
        operands = tuple(sorted(operands, key=id))  # any fixed order: the key only tests equality
    return (op.name, operands, attrs, tuple(r.type for r in op.results))


def same_attributes(a: Op, b: Op, only: tuple[str, ...] | None = None) -> bool:
    """Do ``a`` and ``b`` have strictly equal attributes (see the module docstring), or equal
    attributes ``only``? False where one cannot be compared."""
    try:
        return attributes_key(a, only) == attributes_key(b, only)
    except UnhashableAttribute:
        return False
