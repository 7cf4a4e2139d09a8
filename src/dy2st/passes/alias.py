"""Alias analysis: which values may share their buffer with an input, a capture or a constant.

An analysis, not a rewrite: the memory planner's report and the backend's code generation read it
(outputs that may alias an input are copied before they reach the caller, since returned arrays
belong to the caller). Views follow their operand; control flow results follow what their
branches or loop bodies yield.
"""

from __future__ import annotations

from dy2st.ir.core import CONST, Graph, Op, Value
from dy2st.ir.opdefs import get_op, in_place_results
from dy2st.passes.dataflow import may_have


def may_alias_inputs(graph: Graph) -> set[Value]:
    """Values whose buffer may be an input, a capture, or a constant: outputs must copy them."""
    return may_have(graph, _aliasing_results, initial=graph.body.args)


def _aliasing_results(op: Op, aliasing: set[Value]) -> list[Value]:
    """A constant's result is a buffer the graph holds; a view of an aliasing value aliases too,
    and so does a result written in place into an aliasing value's buffer (an argument the
    function updates in place)."""
    if op.name == CONST:
        return op.results
    opdef = get_op(op.name)
    if opdef.view and op.operands and op.operands[0] in aliasing:
        return op.results
    if opdef.views_any_operand and any(v in aliasing for v in op.operands):
        return op.results
    return [op.results[result] for result, operand in in_place_results(op).items() if op.operands[operand] in aliasing]
