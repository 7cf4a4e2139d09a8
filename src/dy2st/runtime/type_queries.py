"""``type(v)`` and ``isinstance(v, cls)`` in converted code: the answer eager code gets.

While a graph is built, converted code holds stand-ins where eager code holds arrays and numbers:
a ``Tensor`` for an ndarray or NumPy scalar, a ``PythonNumber`` for a Python number computed from
arrays (``float(x.sum())``), a ``SymExpr`` for a size, proxies and frozen containers for captured
objects. The builtins would see the stand-in's own class, and ``isinstance(x, np.ndarray)`` would
be False for every array argument: a silent change of the branch taken. ``convert_call`` swaps in
these versions, which answer for the value eager code holds. Where that depends on which branch
of a tensor ``if`` ran (a 0-d value that is a NumPy scalar on one path and a Python number on the
other), ``isinstance`` is answered when the graph runs, from the value's kind code, and ``type``
is refused with an error at the user's line instead of being guessed.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from dy2st.errors import GraphBuildError, user_location
from dy2st.ir.opcodes import KIND_CODES, KIND_DTYPE_NAMES, NUMPY_SCALAR, numpy_kind_code, numpy_kind_of_code
from dy2st.ir.symbolic import SymExpr
from dy2st.ir.types import PYTHON_TYPE_OF_DTYPE_KIND
from dy2st.ops.python_numbers import PYTHON_CONVERSION
from dy2st.runtime.captures import FrozenDict, FrozenList, ObjectProxy
from dy2st.runtime.control_flow.values import PythonNumber, wrap_result
from dy2st.staging.tensor import Tensor, apply


def eager_type(value: Any) -> type:
    """The type eager code has where converted code holds ``value``."""
    if isinstance(value, Tensor):
        return _tensor_type(value)
    if isinstance(value, SymExpr):
        return int  # a size (``x.shape[0]``) is a Python int eagerly
    if isinstance(value, ObjectProxy):
        return value.__class__  # the proxied object's class
    if isinstance(value, FrozenList):
        return list
    if isinstance(value, FrozenDict):
        return dict
    return builtins.type(value)


def _tensor_type(tensor: Tensor) -> type:
    if tensor.type.shape:
        return np.ndarray
    if tensor._kind_flag is not None:
        raise GraphBuildError(
            "the type of this 0-d value depends on which branch of a tensor `if` or loop ran (a NumPy "
            "scalar, a 0-d array or a Python number), and the graph is built for both",
            user_location(),
            "convert it first (float(v), np.asarray(v)) so that every path gives one type",
        )
    if isinstance(tensor, PythonNumber):
        return PYTHON_TYPE_OF_DTYPE_KIND[tensor.dtype.kind]
    if tensor._scalar:
        return tensor.dtype.type
    return np.ndarray


def staged_type(*args: Any) -> Any:
    """``type(v)``: the class eager code sees; ``type(name, bases, dict)`` is the builtin."""
    if len(args) == 1:
        return eager_type(args[0])
    return builtins.type(*args)


def staged_isinstance(value: Any, classinfo: Any, /) -> Any:
    """``isinstance(v, cls)`` as eager code answers it: by the eager value's class, so tuples of
    classes, abstract classes (``numbers.Real``) and NumPy's scalar hierarchy all work. For a 0-d
    value whose kind depends on the path, a Python bool computed when the graph runs (or known
    at once when every kind gives the same answer)."""
    if isinstance(value, Tensor) and not value.type.shape and value._kind_flag is not None:
        return _answer_by_kind(value, classinfo)
    if isinstance(value, (Tensor, SymExpr, FrozenList, FrozenDict)):
        return builtins.issubclass(eager_type(value), classinfo)
    return builtins.isinstance(value, classinfo)


def _answer_by_kind(value: Tensor, classinfo: Any) -> Any:
    answers = {code: builtins.issubclass(_type_of_kind(code, value), classinfo) for code in _ALL_KIND_CODES}
    if len(set(answers.values())) == 1:
        return answers[0]
    flag = value._kind_flag
    matches = [flag == code for code, answer in answers.items() if answer]
    any_match = matches[0]
    for match in matches[1:]:
        any_match = any_match | match
    converted = apply(PYTHON_CONVERSION, any_match, builtin=bool)  # a Python bool, as isinstance gives
    return wrap_result(converted._builder, converted._value)


def _type_of_kind(code: int, value: Tensor) -> type:
    """The eager type of a 0-d ``value`` whose kind flag holds ``code`` (``ir.opcodes.KIND_CODES``)."""
    if code in _PYTHON_TYPE_OF_CODE:
        return _PYTHON_TYPE_OF_CODE[code]
    named = numpy_kind_of_code(code)
    dtype, scalar = (value.dtype, code == KIND_CODES[NUMPY_SCALAR]) if named is None else (np.dtype(named[0]), named[1])
    return dtype.type if scalar else np.ndarray


_PYTHON_TYPE_OF_CODE = {KIND_CODES[t]: t for t in (bool, int, float, complex)}
_ALL_KIND_CODES = (
    *KIND_CODES.values(),
    *(numpy_kind_code(name, scalar) for name in KIND_DTYPE_NAMES for scalar in (True, False)),
)
