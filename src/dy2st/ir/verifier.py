"""The IR verifier: SSA dominance, types, and region arity. Passes must keep graphs valid.

Checks, with a message naming the op and its source line:
  * every operand is defined before its use, in the same block or an enclosing one;
  * every value is defined exactly once;
  * each op's result types equal what its shape/dtype rule infers from its operands;
  * ``cond``: a 0-d bool predicate, two regions without arguments that each yield the results' types;
  * ``while_loop``: two regions whose arguments have the carried types; the condition region
    yields one 0-d bool, the body yields the carried types;
  * every region ends with ``yield`` and the graph body with ``return``, and nowhere else.
"""

from __future__ import annotations

import numpy as np

from dy2st.ir.core import ANNOTATION_ATTRS, COND, CONST, RETURN, TERMINATORS, WHILE_LOOP, YIELD, Block, Graph, Op, Value
from dy2st.ir.opdefs import get_op, infer_types
from dy2st.ir.symbolic import fits, is_data_dependent, same_form
from dy2st.ir.types import TensorType

# Ops whose result types are set at staging; the verifier checks them structurally instead.


class VerificationError(Exception):
    """The graph breaks an IR invariant (a dy2st bug, never the user's)."""


def _fail(op: Op | None, message: str) -> None:
    where = f" at {op.loc}" if op is not None and op.loc is not None else ""
    name = f"'{op.name}'" if op is not None else "graph"
    raise VerificationError(f"{name}{where}: {message}")


def verify(graph: Graph) -> None:
    """Raise ``VerificationError`` if ``graph`` breaks an invariant."""
    defined: set[Value] = set()
    _verify_block(graph.body, set(), defined, terminator=RETURN)


class _TypeList(list):
    """Types that print as in the IR text (``[f32[4], bool[]]``), for readable messages."""

    def __repr__(self) -> str:
        return "[" + ", ".join(str(t) for t in self) + "]"

    __str__ = __repr__


def _types(values: list[Value]) -> list[TensorType]:
    return _TypeList(v.type.strong() for v in values)


def _verify_block(block: Block, visible: set[Value], defined: set[Value], terminator: str) -> None:
    scope = set(visible)
    for arg in block.args:
        _define(None, arg, defined)
        scope.add(arg)
    if not block.ops or block.ops[-1].name != terminator:
        _fail(block.ops[-1] if block.ops else None, f"block must end with '{terminator}'")
    for i, op in enumerate(block.ops):
        if op.name in TERMINATORS and i != len(block.ops) - 1:
            _fail(op, "terminator in the middle of a block")
        for v in op.operands:
            if v not in scope:
                _fail(op, f"operand {v!r} is used before it is defined (or outside its scope)")
        _verify_op(op, scope, defined)
        for r in op.results:
            _define(op, r, defined)
            scope.add(r)


def _define(op: Op | None, value: Value, defined: set[Value]) -> None:
    if value in defined:
        _fail(op, f"value {value!r} defined twice")
    defined.add(value)


def _verify_op(op: Op, scope: set[Value], defined: set[Value]) -> None:
    if op.name == COND:
        _verify_cond(op, scope, defined)
    elif op.name == WHILE_LOOP:
        _verify_while(op, scope, defined)
    elif op.name == CONST:
        if len(op.results) != 1 or "value" not in op.attrs:
            _fail(op, "const needs one result and a value")
    elif not get_op(op.name).structural:
        opdef = get_op(op.name)
        # Ops that own regions (fused groups) derive their result types from the region.
        attrs = dict(op.attrs, regions=op.regions) if op.regions else dict(op.attrs)
        # Annotations of passes and backends (a planned buffer, a lowering) are not op attributes.
        for key in ANNOTATION_ATTRS:
            attrs.pop(key, None)
        inferred = infer_types(opdef, [v.type for v in op.operands], attrs)
        inferred = list(inferred) if isinstance(inferred, (list, tuple)) else [inferred]
        if not _types_agree([t.strong() for t in inferred], _types(op.results)):
            _fail(op, f"result types {_types(op.results)} differ from the rule's {_TypeList(inferred)}")
        for region in op.regions:
            _verify_block(region.block, scope, defined, YIELD)


def _types_agree(inferred: list[TensorType], actual: list[TensorType]) -> bool:
    """The rule's types are the results' types, up to data-dependent sizes (each inference of a
    data-dependent size makes a fresh symbol)."""
    return len(inferred) == len(actual) and all(
        a.dtype == b.dtype
        and a.weak == b.weak
        and len(a.shape) == len(b.shape)
        and all(same_form(x, y) or is_data_dependent(x) or is_data_dependent(y) for x, y in zip(a.shape, b.shape))
        for a, b in zip(inferred, actual)
    )


def _types_fit(values: list[TensorType], expected: list[TensorType]) -> bool:
    """Values of these types can stand where the expected types are: the same dtypes, and sizes
    of the same form except where the expected size is data-dependent (a branch's own size)."""
    return len(values) == len(expected) and all(
        a.dtype == b.dtype and a.weak == b.weak and fits(a.shape, b.shape) for a, b in zip(values, expected)
    )


def _is_bool_scalar(t: TensorType) -> bool:
    return t.shape == () and t.dtype == np.bool_


def _verify_cond(op: Op, scope: set[Value], defined: set[Value]) -> None:
    if len(op.regions) != 2 or len(op.operands) != 1:
        _fail(op, "cond takes one predicate and two regions")
    if not _is_bool_scalar(op.operands[0].type):
        _fail(op, f"predicate must be bool[], got {op.operands[0].type}")
    for region in op.regions:
        if region.block.args:
            _fail(op, "cond regions take no arguments")
        _verify_block(region.block, scope, defined, YIELD)
        yielded = _types(region.block.ops[-1].operands)
        if not _types_fit(yielded, _types(op.results)):
            _fail(op, f"region yields {yielded}, results are {_types(op.results)}")


def _verify_while(op: Op, scope: set[Value], defined: set[Value]) -> None:
    if len(op.regions) != 2:
        _fail(op, "while_loop takes a cond and a body region")
    carried = _types(op.results)
    if not _types_fit(_types(op.operands), carried):
        _fail(op, f"initial values {_types(op.operands)} do not fit the carried {carried}")
    cond_block, body_block = op.regions[0].block, op.regions[1].block
    for name, block in (("cond", cond_block), ("body", body_block)):
        if _types(block.args) != carried:
            _fail(op, f"{name} region arguments {_types(block.args)} differ from carried {carried}")
        _verify_block(block, scope, defined, YIELD)
    cond_yield = cond_block.ops[-1].operands
    if len(cond_yield) != 1 or not _is_bool_scalar(cond_yield[0].type):
        _fail(op, "the cond region must yield one bool[]")
    if not _types_fit(_types(body_block.ops[-1].operands), carried):
        _fail(op, f"body yields {_types(body_block.ops[-1].operands)}, carried are {carried}")
