"""Alias analysis: which values may share their buffer with an input, a capture or a constant.

An analysis, not a rewrite: the memory planner's report and the backend's code generation read it
(outputs that may alias an input are copied before they reach the caller, since returned arrays
belong to the caller). Views follow their operand; control flow results follow what their
branches or loop bodies yield.
"""

from __future__ import annotations

from dy2st.ir.core import COND, CONST, WHILE_LOOP, Block, Graph, Value
from dy2st.ir.opdefs import get_op


def may_alias_inputs(graph: Graph) -> set[Value]:
    """Values whose buffer may be an input, a capture, or a constant: outputs must copy them."""
    aliasing: set[Value] = set(graph.body.args)

    def visit(block: Block) -> None:
        for op in block.ops:
            if op.name == CONST:
                aliasing.update(op.results)
            elif op.name == COND:
                for region in op.regions:
                    visit(region.block)
                for i, r in enumerate(op.results):
                    if any(region.block.ops[-1].operands[i] in aliasing for region in op.regions):
                        aliasing.add(r)
            elif op.name == WHILE_LOOP:
                body_yield = op.regions[1].block.ops[-1].operands
                for i, (init, r) in enumerate(zip(op.operands, op.results)):
                    if init in aliasing or body_yield[i] in aliasing:
                        aliasing.update((r, op.regions[0].block.args[i], op.regions[1].block.args[i]))
                for region in op.regions:
                    visit(region.block)
            elif get_op(op.name).view and op.operands and op.operands[0] in aliasing:
                aliasing.update(op.results)
            for region in op.regions if not get_op(op.name).control_flow else ():
                visit(region.block)

    # A loop can hand an aliasing value back to its own arguments: iterate to a fixed point.
    size = -1
    while size != len(aliasing):
        size = len(aliasing)
        visit(graph.body)
    return aliasing
