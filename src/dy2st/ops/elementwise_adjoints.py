"""Adjoint rules of the elementwise ufuncs (the ``vjp`` trait of their op definitions).

Each rule gets the cotangent ``g`` of the result and returns one cotangent per operand, written
with the forward operands ``x`` (``a``, ``b``) and the forward result ``y``; broadcasting and
dtype are fitted by the caller. Conventions at points where the derivative does not exist
(docs/autodiff.md): functions that are piecewise constant (``floor``, ``sign``, ``round``...)
have zero gradient; ``abs`` has gradient 0 at 0 (``sign``); ``maximum``/``minimum`` split the
gradient equally between tied operands, as JAX does.
"""

from __future__ import annotations

import math

import numpy as np

from dy2st.ir.core import Op, Value
from dy2st.ir.emit import Emitter
from dy2st.ops.adjoint import AdjointRule, Cotangents, div, mul, neg


def _unary(derivative) -> AdjointRule:
    """The rule of ``y = f(x)``: ``g * derivative(e, x, y)``."""

    def vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
        (g,) = cts
        if g is None:
            return [None]
        return [mul(e, g, derivative(e, op.operands[0], op.result))]

    return vjp


def _zero(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """Piecewise-constant functions: their gradient is zero wherever it exists."""
    return [None] * len(op.operands)


def _identity(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    return [cts[0]]


def _negative(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    return [None if cts[0] is None else neg(e, cts[0])]


def _sqrt_term(e: Emitter, x: Value, sign_of_square: float, one_minus: bool) -> Value:
    """``sqrt(1 - x*x)`` (``one_minus``) or ``sqrt(x*x + sign_of_square)``."""
    square = mul(e, x, x)
    inner = e.op("subtract", 1.0, square) if one_minus else e.op("add", square, sign_of_square)
    return e.op("sqrt", inner)


_UNARY_DERIVATIVES = {
    np.absolute: lambda e, x, y: e.op("sign", x),
    np.fabs: lambda e, x, y: e.op("sign", x),
    np.square: lambda e, x, y: mul(e, x, 2.0),
    np.sqrt: lambda e, x, y: div(e, 0.5, y),
    np.cbrt: lambda e, x, y: div(e, 1.0, mul(e, mul(e, y, y), 3.0)),
    np.exp: lambda e, x, y: y,
    np.exp2: lambda e, x, y: mul(e, y, math.log(2.0)),
    np.expm1: lambda e, x, y: e.op("add", y, 1.0),
    np.log: lambda e, x, y: div(e, 1.0, x),
    np.log2: lambda e, x, y: div(e, 1.0 / math.log(2.0), x),
    np.log10: lambda e, x, y: div(e, 1.0 / math.log(10.0), x),
    np.log1p: lambda e, x, y: div(e, 1.0, e.op("add", x, 1.0)),
    np.sin: lambda e, x, y: e.op("cos", x),
    np.cos: lambda e, x, y: neg(e, e.op("sin", x)),
    np.tan: lambda e, x, y: e.op("add", mul(e, y, y), 1.0),
    np.arcsin: lambda e, x, y: div(e, 1.0, _sqrt_term(e, x, 0.0, True)),
    np.arccos: lambda e, x, y: div(e, -1.0, _sqrt_term(e, x, 0.0, True)),
    np.arctan: lambda e, x, y: div(e, 1.0, e.op("add", mul(e, x, x), 1.0)),
    np.sinh: lambda e, x, y: e.op("cosh", x),
    np.cosh: lambda e, x, y: e.op("sinh", x),
    np.tanh: lambda e, x, y: e.op("subtract", 1.0, mul(e, y, y)),
    np.arcsinh: lambda e, x, y: div(e, 1.0, _sqrt_term(e, x, 1.0, False)),
    np.arccosh: lambda e, x, y: div(e, 1.0, _sqrt_term(e, x, -1.0, False)),
    np.arctanh: lambda e, x, y: div(e, 1.0, e.op("subtract", 1.0, mul(e, x, x))),
    np.reciprocal: lambda e, x, y: neg(e, mul(e, y, y)),
    np.deg2rad: lambda e, x, y: e.const(math.pi / 180.0),
    np.radians: lambda e, x, y: e.const(math.pi / 180.0),
    np.rad2deg: lambda e, x, y: e.const(180.0 / math.pi),
    np.degrees: lambda e, x, y: e.const(180.0 / math.pi),
}


def _add(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    return [cts[0], cts[0]]


def _subtract(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    (g,) = cts
    return [g, None if g is None else neg(e, g)]


def _multiply(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    (g,) = cts
    a, b = op.operands
    return [mul(e, g, b), mul(e, g, a)] if g is not None else [None, None]


def _divide(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    (g,) = cts
    if g is None:
        return [None, None]
    a, b = op.operands
    return [div(e, g, b), neg(e, div(e, mul(e, g, op.result), b))]


def _power(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``y = a ** b``: ``b * a ** (b - 1)`` and ``log(a) * y``, the latter taken as 0 where
    ``a == 0`` (the limit from above, as JAX takes it)."""
    (g,) = cts
    if g is None:
        return [None, None]
    a, b = op.operands
    da = mul(e, g, mul(e, b, e.op(op.name, a, e.op("subtract", b, 1))))
    safe_log = e.op("log", e.op("where", e.op("equal", a, 0), 1.0, a))
    db = mul(e, g, mul(e, op.result, safe_log))
    return [da, db]


def _choose(first_wins: str, second_wins: str):
    """``maximum``/``minimum`` (and ``fmax``/``fmin``): the gradient goes to the operand the op
    chose; where the operands tie, half to each. Written with ``where`` so that it fuses with the
    elementwise code around it."""

    def vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
        (g,) = cts
        if g is None:
            return [None, None]
        a, b = op.operands
        half = e.op("where", e.op("equal", a, b), mul(e, g, 0.5), 0.0)
        return [e.op("where", e.op(first_wins, a, b), g, half), e.op("where", e.op(second_wins, a, b), g, half)]

    return vjp


def _arctan2(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    (g,) = cts
    if g is None:
        return [None, None]
    a, b = op.operands
    scale = div(e, g, e.op("add", mul(e, a, a), mul(e, b, b)))
    return [mul(e, scale, b), neg(e, mul(e, scale, a))]


def _hypot(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    (g,) = cts
    if g is None:
        return [None, None]
    a, b = op.operands
    scale = div(e, g, op.result)
    return [mul(e, scale, a), mul(e, scale, b)]


def _logaddexp(power_of: str):
    """``y = log(exp(a) + exp(b))`` (base 2 for ``logaddexp2``): ``exp(a - y)``, ``exp(b - y)``."""

    def vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
        (g,) = cts
        if g is None:
            return [None, None]
        a, b = op.operands
        return [mul(e, g, e.op(power_of, e.op("subtract", x, op.result))) for x in (a, b)]

    return vjp


def _copysign(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``copysign(a, b)`` is ``a`` or ``-a``: the gradient to ``a`` keeps or flips its sign; ``b``
    only chooses the sign (zero gradient)."""
    (g,) = cts
    if g is None:
        return [None, None]
    a = op.operands[0]
    same = e.op("equal", e.op("signbit", a), e.op("signbit", op.result))
    return [e.op("where", same, g, neg(e, g)), None]


def _remainder(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``a % b = a - floor(a / b) * b``."""
    (g,) = cts
    if g is None:
        return [None, None]
    a, b = op.operands
    return [g, neg(e, mul(e, g, e.op("floor_divide", a, b)))]


def _fmod(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``fmod(a, b) = a - trunc(a / b) * b`` (the quotient rounds toward zero, unlike ``%``)."""
    (g,) = cts
    if g is None:
        return [None, None]
    a, b = op.operands
    return [g, neg(e, mul(e, g, e.op("trunc", div(e, a, b))))]


def _divmod(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``divmod(a, b)`` is ``(a // b, a % b)``: the quotient is piecewise constant, the
    remainder differentiates as ``%``."""
    _, g = cts
    if g is None:
        return [None, None]
    a, b = op.operands
    return [g, neg(e, mul(e, g, op.results[0]))]


def _modf(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``modf(x)`` is ``(x - trunc(x), trunc(x))``: the fraction has gradient 1, the integral
    part 0."""
    return [cts[0]]


def _frexp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``frexp(x)`` is ``(x * 2**-e, e)``: the mantissa scales by the exact power of two ``2**-e``
    (piecewise; the exponent is an integer and carries no gradient)."""
    g = cts[0]
    if g is None:
        return [None]
    return [e.op("ldexp", g, neg(e, op.results[1]))]


def _ldexp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``ldexp(x, n) = x * 2**n``: the gradient is scaled by the same exact power of two; ``n``
    is an integer."""
    (g,) = cts
    if g is None:
        return [None, None]
    return [e.op("ldexp", g, op.operands[1]), None]


def _heaviside(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``heaviside(x, h)`` is a step in ``x`` (zero gradient) that takes the value ``h`` where
    ``x == 0``: the gradient to ``h`` flows there only."""
    (g,) = cts
    if g is None:
        return [None, None]
    at_zero = e.op("equal", op.operands[0], 0.0)
    return [None, e.op("where", at_zero, g, 0.0)]


def _nextafter(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``nextafter(x, y)`` moves ``x`` by one unit in the last place: gradient 1 to ``x``, as for
    ``x + spacing``; ``y`` only chooses the direction."""
    return [cts[0], None]


UFUNC_ADJOINTS: dict[np.ufunc, AdjointRule] = {
    **{ufunc: _unary(derivative) for ufunc, derivative in _UNARY_DERIVATIVES.items()},
    **dict.fromkeys((np.sign, np.floor, np.ceil, np.trunc, np.rint, np.spacing), _zero),
    np.positive: _identity,
    np.negative: _negative,
    np.add: _add,
    np.subtract: _subtract,
    np.multiply: _multiply,
    np.divide: _divide,
    np.power: _power,
    np.float_power: _power,
    np.maximum: _choose("greater", "less"),
    np.fmax: _choose("greater", "less"),
    np.minimum: _choose("less", "greater"),
    np.fmin: _choose("less", "greater"),
    np.arctan2: _arctan2,
    np.hypot: _hypot,
    np.logaddexp: _logaddexp("exp"),
    np.logaddexp2: _logaddexp("exp2"),
    np.remainder: _remainder,
    np.fmod: _fmod,
    np.floor_divide: _zero,
    np.divmod: _divmod,
    np.modf: _modf,
    np.frexp: _frexp,
    np.ldexp: _ldexp,
    np.heaviside: _heaviside,
    np.nextafter: _nextafter,
    np.copysign: _copysign,
}
"""The adjoint rule of each differentiable ufunc; ufuncs of booleans and integers need none."""
