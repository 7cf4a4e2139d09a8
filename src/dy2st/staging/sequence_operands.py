"""Python operators between a tensor and a list or tuple, as eager code runs them.

An ndarray operand makes an array of the sequence (``np.asarray``) and applies the ufunc element by
element, with the array's promotion rules (``x_f32 * [1.0, 2.0]`` is float64): ``as_value`` does
that. Two kinds of 0-d values do something else, because Python, not NumPy, decides:

* a NumPy scalar (``x.sum()``, ``x[0]``) defers ``*`` to the sequence: ``np.int64(2) * [1, 2]``
  repeats the list, ``np.float64(2) * [1, 2]`` raises TypeError. Every other operator is
  element by element;
* a Python number (a loop counter, ``int(t)``) never combines with a sequence element by element:
  ``*`` repeats it (ints) or raises, ``==`` is False, ``!=`` True, and every other operator raises
  TypeError.

A repetition needs the count as a Python int, which a tensor only has when the graph runs, so it
is refused as such.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from dy2st.errors import build_error, user_location
from dy2st.ir.types import PYTHON_TYPE_OF_DTYPE_KIND

_SYMBOLS = {
    np.add: "+",
    np.subtract: "-",
    np.multiply: "*",
    np.true_divide: "/",
    np.floor_divide: "//",
    np.remainder: "%",
    np.power: "**",
    np.matmul: "@",
    np.bitwise_and: "&",
    np.bitwise_or: "|",
    np.bitwise_xor: "^",
    np.left_shift: "<<",
    np.right_shift: ">>",
    np.less: "<",
    np.less_equal: "<=",
    np.greater: ">",
    np.greater_equal: ">=",
    np.equal: "==",
    np.not_equal: "!=",
}


def with_sequence_rules(ufunc: np.ufunc, method: Callable[[Any, Any], Any], *, reflected: bool = False):
    """``method(tensor, other)`` (a Python operator of Tensor) that first applies the rules above
    when ``other`` is a list or tuple."""

    @functools.wraps(method)
    def operator_method(tensor: Any, other: Any) -> Any:
        if isinstance(other, (list, tuple)) and (tensor.type.weak or tensor._scalar):
            return _scalar_with_sequence(ufunc, tensor, other, reflected, lambda: method(tensor, other))
        return method(tensor, other)

    return operator_method


def _scalar_with_sequence(ufunc, tensor, sequence, reflected: bool, elementwise: Callable[[], Any]) -> Any:
    python_number = tensor.type.weak
    kind = tensor.dtype.kind
    if ufunc is np.multiply:
        if kind in ("iub" if python_number else "iu"):
            operator.index(tensor)  # the repetition count: refused as a value only known at run time
        type_name = PYTHON_TYPE_OF_DTYPE_KIND[kind].__name__ if python_number else f"numpy.{tensor.dtype.type.__name__}"
        raise _type_error(f"can't multiply sequence by non-int of type '{type_name}'")
    if not python_number:
        return elementwise()
    if ufunc is np.equal:
        return False
    if ufunc is np.not_equal:
        return True
    names = [PYTHON_TYPE_OF_DTYPE_KIND[kind].__name__, type(sequence).__name__]
    left, right = reversed(names) if reflected else names
    raise _type_error(
        f"unsupported operand type(s) for {_SYMBOLS.get(ufunc, f'{ufunc.__name__}()')}: '{left}' and '{right}'"
    )


def _type_error(message: str) -> Exception:
    return build_error(TypeError(message), f"{message} (Python raises here too)", user_location())
