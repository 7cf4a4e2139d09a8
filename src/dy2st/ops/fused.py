"""The ``fused`` op: a group of elementwise ops that the backend runs as one tiled kernel.

Only the ``fuse-elementwise`` pass builds it. Its operands are the group's external inputs; its one
region has one block argument per operand and holds clones of the absorbed ops (each keeping its
own source location), ending with a ``yield`` of the group's outputs, which become the fused op's
results::

    %3 = fused %x {name='fused_0'} : f32[1000]
    {
      ^args(%x_1: f32[1000])
      %0 = multiply %x_1, 2.0 : f32[1000]
      %1 = tanh %0 : f32[1000]
      %2 = add %1, 1 : f32[1000]
      yield %2
    }
"""

from __future__ import annotations

from typing import Any

from dy2st.ir.opdefs import OpDef, register
from dy2st.ir.types import TensorType


def fused_rule(types: list[TensorType], *, regions: list[Any] | None = None, **attrs: Any) -> list[TensorType]:
    """Result types of a fused op: what its region yields, given block arguments that fit the operands.

    The verifier passes the op's ``regions``; the graph builder never stages a fused op directly.
    """
    if not regions:
        raise TypeError("a fused op needs its region (only the fuse-elementwise pass builds one)")
    if len(regions) != 1:
        raise TypeError(f"a fused op has one region, got {len(regions)}")
    block = regions[0].block
    arg_types = [a.type.strong() for a in block.args]
    if arg_types != [t.strong() for t in types]:
        raise TypeError(f"region arguments {arg_types} differ from operands {[t.strong() for t in types]}")
    terminator = block.terminator
    if terminator is None or terminator.name != "yield":
        raise TypeError("a fused region must end with 'yield'")
    return [v.type.strong() for v in terminator.operands]


FUSED = "fused"
"""The opcode of a fused group (the fusion pass builds it)."""

register(
    OpDef(
        FUSED,
        fused_rule,
        num_results=-1,
        doc="a fused group of elementwise ops run in cache-sized tiles; one region",
        region_kernel=True,
    )
)
