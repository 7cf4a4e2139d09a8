"""How a fused kernel writes a ``select`` op (``np.where(condition, x, y)``) into a tile.

NumPy's ``where`` has no ``out=``, and a select must not do arithmetic (``NaN * 0`` is NaN, and
``-0.0`` must stay ``-0.0``), so the tile is written in one of two ways, both exact to the bit:

- bitwise, when ``x`` and ``y`` are arrays of the result dtype or Python numbers, and the result
  is a bool, an integer or a float of 1, 2, 4 or 8 bytes: everything is viewed as unsigned
  integers of that size ``U`` and the condition widened to a mask of all ones or all zeros::

      u_subtract(0, c, dtype=U, out=m)                 # True -> 0xFF..FF, False -> 0
      u_bitwise_xor(x.view(U), y.view(U), out=t.view(U))
      u_bitwise_and(t.view(U), m, out=t.view(U))
      u_bitwise_xor(t.view(U), y.view(U), out=t.view(U))  # y ^ ((x ^ y) & m): x where c, else y

  With ``y`` (or ``x``) a number whose bits are all zero (``0.0``, ``0``: the ReLU adjoint's
  ``where(z > 0, g, 0.0)``) the mask is made in the tile and one ``bitwise_and`` finishes it.
  Four passes of cheap integer ufuncs: on 64K float32 with a random mask they take 25 us where
  ``np.where`` and a masked ``np.copyto`` take 210-220 us (a branch per element).
- by copying otherwise (mixed dtypes, a weak operand read from an input): fill the tile from
  ``y``, then ``np.copyto(t, x, where=c)``.

Both cast as ``np.where`` does: unsafely, after making a Python number a NumPy array (so
``np.where(c, int8_array, 1000)`` wraps 1000 to -24 where ``np.copyto`` of the Python int would
raise); arrays of the operands' dtypes always fit the result dtype, by the promotion rule that
made it. The forms differ in which operands they read after first writing the tile
(``late_operands``): the tile may be an operand's own buffer, or an ``out=`` that is an input,
only where that operand is read no later than that.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from dy2st.ir.core import CONST, Op, Value

CONDITION, X, Y = 0, 1, 2
"""The positions of a select's operands."""


def _literal(value: Value) -> Any:
    """The Python number a 0-d ``const`` operand holds, or None when it is not one."""
    op = value.op
    if op is None or op.name != CONST or value.type.ndim:
        return None
    return op.attrs["value"]


def as_result_dtype(number: Any, dtype: np.dtype) -> np.ndarray | None:
    """``number`` cast to ``dtype`` as ``np.where`` casts it, or None where that raises or warns
    (a Python int beyond int64, a float that overflows): the copying form then does it when the
    kernel runs, as eager code would."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with np.errstate(all="raise"):
                return np.asarray(number).astype(dtype, casting="unsafe")
    except (OverflowError, ArithmeticError, RuntimeWarning, FloatingPointError, TypeError, ValueError):
        return None


def bits_dtype(op: Op) -> np.dtype | None:
    """The unsigned integer dtype the bitwise form views the operands as, or None when it does
    not apply (see the module docstring)."""
    result = op.results[0].type.dtype
    if result.kind not in "biuf" or result.itemsize not in (1, 2, 4, 8):
        return None
    for value in op.operands[X:]:
        number = _literal(value)
        if number is not None:
            if as_result_dtype(number, result) is None:
                return None
        elif value.type.ndim == 0 or value.type.weak or value.type.dtype != result:
            return None
    return np.dtype(f"u{result.itemsize}")


def _zero_bits(value: Value, dtype: np.dtype) -> bool:
    number = _literal(value)
    if number is None:
        return False
    converted = as_result_dtype(number, dtype)
    return converted is not None and not converted.view(f"u{dtype.itemsize}").any()


def late_operands(op: Op) -> set[int]:
    """The positions of the operands the select reads after it first writes its tile."""
    bits = bits_dtype(op)
    if bits is None:
        return {CONDITION, X}  # the fill from y writes first
    result = op.results[0].type.dtype
    if _zero_bits(op.operands[Y], result):
        return {X}  # the mask is made in the tile first
    if _zero_bits(op.operands[X], result):
        return {Y}
    return {Y}  # read again by the last xor


class SelectWriter:
    """Writes the lines of one select op; ``namespace`` receives the functions and constants they
    name, ``temporary(dtype)`` gives a scratch tile of that dtype (for the mask) and
    ``release(name)`` returns it."""

    def __init__(self, namespace: dict[str, Any], temporary, release):
        self.namespace = namespace
        self.temporary = temporary
        self.release = release

    def lines(self, op: Op, names: dict[Value, str], target: str) -> list[str]:
        """The lines that write ``op``'s result into the tile ``target``."""
        bits = bits_dtype(op)
        if bits is None:
            return self._by_copying(op, names, target)
        return self._bitwise(op, names, target, bits)

    def _by_copying(self, op: Op, names: dict[Value, str], target: str) -> list[str]:
        self.namespace["u_copyto"] = np.copyto
        condition, x, y = op.operands
        lines = []
        if names[y] != target:  # else the tile already holds y
            lines.append(f"u_copyto({target}, {self._array_operand(y, names)}, casting='unsafe')")
        x_name, mask = self._array_operand(x, names), names[condition]
        lines.append(f"u_copyto({target}, {x_name}, casting='unsafe', where={mask})")
        return lines

    def _array_operand(self, value: Value, names: dict[Value, str]) -> str:
        """A weak Python number made a NumPy array first, as ``np.where`` does (a Python int as
        int64, so the unsafe cast wraps rather than raising)."""
        name = names[value]
        if not value.type.weak:
            return name
        number = _literal(value)
        if number is not None:
            try:
                return self._constant(np.asarray(number))
            except OverflowError:  # beyond int64: ``np.copyto`` raises as ``np.where`` does
                return name
        self.namespace["u_asarray"] = np.asarray
        return f"u_asarray({name})"

    def _bitwise(self, op: Op, names: dict[Value, str], target: str, bits: np.dtype) -> list[str]:
        for ufunc in (np.subtract, np.bitwise_and, np.bitwise_xor):
            self.namespace[f"u_{ufunc.__name__}"] = ufunc
        unsigned = self._constant(bits)
        condition, x, y = op.operands
        result = op.results[0].type.dtype

        def operand_bits(value: Value) -> str:
            """An array operand's view as ``bits``, or a number's bits as a constant."""
            number = _literal(value)
            if number is None:
                return f"{names[value]}.view({unsigned})"
            converted = as_result_dtype(number, result)
            assert converted is not None  # bits_dtype checked that it converts
            return self._constant(converted.view(bits)[()])

        tile = f"{target}.view({unsigned})"
        if _zero_bits(y, result):  # x where c, else all zero bits
            return [
                f"u_subtract(0, {names[condition]}, dtype={unsigned}, out={tile})",
                f"u_bitwise_and({tile}, {operand_bits(x)}, out={tile})",
            ]
        if _zero_bits(x, result):  # the mask inverted: all ones where c is False
            return [
                f"u_subtract({names[condition]}, 1, dtype={unsigned}, out={tile})",
                f"u_bitwise_and({tile}, {operand_bits(y)}, out={tile})",
            ]
        mask = self.temporary(bits)
        y_bits = operand_bits(y)
        lines = [
            f"u_subtract(0, {names[condition]}, dtype={unsigned}, out={mask})",
            f"u_bitwise_xor({operand_bits(x)}, {y_bits}, out={tile})",
            f"u_bitwise_and({tile}, {mask}, out={tile})",
            f"u_bitwise_xor({tile}, {y_bits}, out={tile})",
        ]
        self.release(mask)
        return lines

    def _constant(self, value: Any) -> str:
        name = f"K{len(self.namespace)}"
        self.namespace[name] = value
        return name
