"""Copies of ops, with their nested regions, into another block: the backward code of a branch or
a loop iteration recomputes the forward values it needs from the values the forward pass left."""

from __future__ import annotations

from collections.abc import Iterable

from dy2st.ir.core import Block, Op, Region, Value


def clone_ops(ops: Iterable[Op], into: Block, mapping: dict[Value, Value]) -> None:
    """Append a copy of each op to ``into``, its operands read through ``mapping`` (values not in
    it are used as they are: they are defined outside the ops). ``mapping`` gains each original
    result (and nested block argument) with its copy."""
    for op in ops:
        into.append(clone_op(op, mapping))


def clone_op(op: Op, mapping: dict[Value, Value]) -> Op:
    """A copy of ``op`` (regions included) over the operands ``mapping`` gives."""
    regions = [Region(clone_block(region.block, mapping)) for region in op.regions]
    copy = Op(
        op.name,
        [mapping.get(v, v) for v in op.operands],
        [r.type for r in op.results],
        dict(op.attrs),
        regions,
        op.loc,
    )
    for old, new in zip(op.results, copy.results):
        new.name_hint = old.name_hint
        mapping[old] = new
    return copy


def clone_block(block: Block, mapping: dict[Value, Value]) -> Block:
    copy = Block([a.type for a in block.args], [a.name_hint for a in block.args])
    mapping.update(zip(block.args, copy.args))
    clone_ops(block.ops, copy, mapping)
    return copy
