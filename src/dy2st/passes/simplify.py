"""Algebraic simplification: identities that make an op disappear or get cheaper.

Before::

    %0 = multiply %x, 1 : f32[4]
    %1 = transpose %0 {axes=(1, 0)} : f32[4]
    %2 = power %x, 3 : f32[4]

After::

    %3 = multiply %x, %x : f32[4]
    %4 = multiply %3, %x : f32[4]

Rewrites: ``x*1``, ``1*x``, ``x+0``, ``0+x``, ``x-0``, ``x/1``, ``-(-x)``, ``astype`` to the same
dtype, ``transpose(transpose(x))`` (axes composed; the identity permutation gives ``x``),
``reshape(reshape(x))`` and reshapes to the same shape, small integer powers of floats:
``x**2 -> x*x``, ``x**3 -> x*x*x``, ``x**4 -> (x*x)*(x*x)``, and a functional update repeated
with the same value at the same place: ``A[s] -= v`` stages, as Python runs it, as an update of
``A`` through the view ``A[s]`` followed by ``A[s] = result``, which writes the same elements
again; an update is idempotent, so the second is the first.

Every rewrite keeps exactly the type (shape, dtype, weakness) the original result had, or is not
made: ``x_i32 * 1.0`` is float64, so it is not ``x``; ``x * ones((3, 4))`` broadcasts, so it stays.
Identities match bit for bit in the result's dtype, signed zeros included: ``x + 0.0`` of a float
``x`` is not rewritten (it turns ``-0.0`` into ``+0.0``), ``x + (-0.0)`` and ``i + 0`` of an integer
``i`` are. One rewrite changes bits, within what the design licenses: repeated multiplication
rounds differently from ``pow`` (within 2 ulp, as XLA does).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from dy2st.ir.core import Block, Graph, Op, Value
from dy2st.ir.opdefs import UFUNC_OPS, get_op, infer_types
from dy2st.ops.shape import ASTYPE, RESHAPE, TRANSPOSE
from dy2st.passes.base import Pass
from dy2st.passes.cse import same_attributes
from dy2st.passes.fold import constant_value

# A rule looks at one op and returns the value that replaces its result, or None. It may append
# new ops to ``emitted``; they are placed just before the op being replaced.
Rule = Callable[[Op, list[Op]], "Value | None"]

POWERS_AS_PRODUCTS = (2, 3, 4)
"""Exponents rewritten into multiplications: the design licenses them (within 2 ulp of ``pow``,
checked in the pass tests); longer products would round further from ``pow``."""


class AlgebraicSimplification(Pass):
    """Apply identities such as ``x*1 -> x`` and ``x**2 -> x*x`` (see the module docstring)."""

    name = "simplify"

    def run(self, graph: Graph) -> bool:
        return simplify(graph)


def simplify(graph: Graph) -> bool:
    """Rewrite ``graph`` in place; return whether anything changed."""
    replacements: dict[Value, Value] = {}
    _simplify_block(graph.body, replacements)
    return bool(replacements)


def _simplify_block(block: Block, replacements: dict[Value, Value]) -> None:
    new_ops: list[Op] = []
    for op in block.ops:
        op.operands = [replacements.get(v, v) for v in op.operands]
        for region in op.regions:
            _simplify_block(region.block, replacements)
        emitted: list[Op] = []
        replacement = _apply_rules(op, emitted)
        if replacement is None:
            new_ops.append(op)
            continue
        new_ops.extend(emitted)
        replacements[op.result] = replacement
    if len(new_ops) != len(block.ops) or any(a is not b for a, b in zip(new_ops, block.ops)):
        block.set_ops(new_ops)


def _apply_rules(op: Op, emitted: list[Op]) -> Value | None:
    for rule in _rules_for(op.name):
        attempt: list[Op] = []
        replacement = rule(op, attempt)
        if replacement is not None and replacement.type == op.result.type:
            emitted.extend(attempt)
            return replacement
    return None


# --- helpers ------------------------------------------------------------------------------------
def is_constant_equal_to(value: Value, number: float, dtype: np.dtype | None = None) -> bool:
    """True if ``value`` is a literal constant whose every element is ``number`` once both are in
    ``dtype`` (the op's result dtype, where it computes): equal, and with the same sign where
    ``number`` is a floating zero (``0`` is ``+0.0`` in a float result, not ``-0.0``)."""
    literal = constant_value(value)
    if literal is None:
        return False
    array, target = np.asarray(literal), np.asarray(number)
    if dtype is not None:
        try:
            with np.errstate(all="ignore"):
                array, target = array.astype(dtype), target.astype(dtype)
        except (OverflowError, TypeError, ValueError):
            return False  # a Python int beyond the dtype (2**64 carried as a Python number)
    if array.size == 0 or not bool(np.all(array == target)):
        return False
    return array.dtype.kind not in "fc" or bool(np.all(np.signbit(array.real) == np.signbit(target.real)))


def _emit(name: str, operands: list[Value], like: Op, emitted: list[Op], **attrs) -> Value:
    """A new op computing ``name(operands)``, typed by its rule, at ``like``'s location."""
    inferred = infer_types(get_op(name), [v.type for v in operands], attrs)
    types = list(inferred) if isinstance(inferred, (list, tuple)) else [inferred]
    op = Op(name, operands, types, attrs, loc=like.loc)
    emitted.append(op)
    return op.result


def _defining(value: Value, name: str) -> Op | None:
    op = value.op
    return op if op is not None and op.name == name else None


# --- rules --------------------------------------------------------------------------------------
def _right_identity(number: float) -> Rule:
    """``x op number -> x``."""
    return lambda op, emitted: (
        op.operands[0] if is_constant_equal_to(op.operands[1], number, op.result.type.dtype) else None
    )


def _left_identity(number: float) -> Rule:
    """``number op x -> x``."""
    return lambda op, emitted: (
        op.operands[1] if is_constant_equal_to(op.operands[0], number, op.result.type.dtype) else None
    )


def _involution(op: Op, emitted: list[Op]) -> Value | None:
    """``f(f(x)) -> x`` for an op that undoes itself (``-(-x)``)."""
    inner = _defining(op.operands[0], op.name)
    return inner.operands[0] if inner is not None else None


def _same_dtype_cast(op: Op, emitted: list[Op]) -> Value | None:
    return op.operands[0] if np.dtype(op.attrs["dtype"]) == op.operands[0].type.dtype else None


def _compose_transposes(op: Op, emitted: list[Op]) -> Value | None:
    axes = tuple(op.attrs["axes"])
    source = op.operands[0]
    inner = _defining(source, TRANSPOSE)
    if inner is not None:
        # transpose(transpose(x, a), b)[i] reads axis a[b[i]] of x.
        inner_axes = tuple(inner.attrs["axes"])
        axes = tuple(inner_axes[b] for b in axes)
        source = inner.operands[0]
    if axes == tuple(range(len(axes))):
        return source
    if inner is None:
        return None
    return _emit(TRANSPOSE, [source], op, emitted, axes=axes)


def _collapse_reshapes(op: Op, emitted: list[Op]) -> Value | None:
    source = op.operands[0]
    inner = _defining(source, RESHAPE)
    if inner is not None:
        source = inner.operands[0]
    if source.type.shape == op.result.type.shape:
        return source
    if inner is None:
        return None
    return _emit(RESHAPE, [source], op, emitted, shape=op.result.type.shape)


def _power_as_products(op: Op, emitted: list[Op]) -> Value | None:
    base, exponent = op.operands
    literal = constant_value(exponent)
    if literal is None or base.type.dtype.kind != "f" or np.ndim(literal) != 0:
        return None
    if np.asarray(literal).dtype.kind not in "iuf":  # bool and complex exponents stay powers
        return None
    literal = np.asarray(literal).item()
    if literal not in POWERS_AS_PRODUCTS:
        return None
    multiply = UFUNC_OPS[np.multiply]
    square = _emit(multiply, [base, base], op, emitted)
    if literal == 2:
        return square
    if literal == 3:
        return _emit(multiply, [square, base], op, emitted)
    return _emit(multiply, [square, square], op, emitted)


def _repeated_update(op: Op, emitted: list[Op]) -> Value | None:
    """``update(update(x, v, i), v, i) -> update(x, v, i)``: writing the same values at the same
    places again changes nothing (also with repeated indices, where the last write wins both
    times). SSA values never change, so ``v`` and ``i`` are the same in both."""
    position = get_op(op.name).updates_operand
    assert position is not None
    inner = _defining(op.operands[position], op.name)
    if inner is None or len(inner.operands) != len(op.operands):
        return None
    others = [v for i, v in enumerate(op.operands) if i != position]
    inner_others = [v for i, v in enumerate(inner.operands) if i != position]
    if any(a is not b for a, b in zip(others, inner_others)) or not same_attributes(op, inner):
        return None
    return inner.result


RULES: dict[str, tuple[Rule, ...]] = {
    ASTYPE: (_same_dtype_cast,),
    TRANSPOSE: (_compose_transposes,),
    RESHAPE: (_collapse_reshapes,),
}
"""Rewrites of particular ops, by opcode (see ``_rules_for`` for the ones traits describe)."""


@functools.cache
def _rules_for(name: str) -> tuple[Rule, ...]:
    """The rewrites to try on op ``name``, in order; the first whose replacement has the right
    type wins. Identities and involutions come from the op definition's traits."""
    opdef = get_op(name)
    rules: list[Rule] = []
    if opdef.right_identity is not None:
        rules.append(_right_identity(opdef.right_identity))
    if opdef.left_identity is not None:
        rules.append(_left_identity(opdef.left_identity))
    if opdef.involution:
        rules.append(_involution)
    if opdef.ufunc is np.power:
        rules.append(_power_as_products)
    if opdef.updates_operand is not None and not opdef.accumulates:
        rules.append(_repeated_update)
    return tuple(rules) + RULES.get(name, ())
