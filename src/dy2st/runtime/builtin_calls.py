"""Python builtins called on tensors in converted code: ``int``, ``float``, ``round``, ``min``, ``max``.

Eagerly these turn a NumPy value into a Python number (``int(x.sum())``, ``round(v)``) or pick one
of their arguments (``max(a, b)``). A symbolic tensor has no value while the graph is built, so
``convert_call`` swaps in these versions, which stage the same thing: the result is a Python number
when the graph runs (a ``PythonNumber`` while it is built), or the argument Python's comparison
picks. With no tensor argument, each is the builtin itself.
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from dy2st.ops.python_numbers import PYTHON_CONVERSION
from dy2st.runtime.control_flow.cond import cond
from dy2st.runtime.control_flow.values import wrap_result
from dy2st.staging.tensor import Tensor, apply


def _converted(x: Tensor, builtin: Callable[..., Any]) -> Any:
    """``builtin(x)`` when the graph runs (``python_conversion``), a Python number to user code."""
    result = apply(PYTHON_CONVERSION, x, builtin=builtin)
    return wrap_result(result._builder, result._value)


def staged_int(x: Any = 0, *args: Any) -> Any:
    """``int(t)``: truncates toward zero, raises on NaN and infinity, as eagerly."""
    if not isinstance(x, Tensor) or args:
        return builtins.int(x, *args)
    return _converted(x, builtins.int)


def staged_float(x: Any = 0.0) -> Any:
    """``float(t)``."""
    if not isinstance(x, Tensor):
        return builtins.float(x)
    return _converted(x, builtins.float)


def staged_round(number: Any, ndigits: Any = None) -> Any:
    """``round(t)`` is a Python int (half to even); ``round(t, n)`` is what NumPy's ``__round__``
    gives: a NumPy value of the same dtype."""
    if not isinstance(number, Tensor):
        return builtins.round(number, ndigits)
    if ndigits is not None:
        return np.round(number, ndigits)
    return _converted(number, builtins.round)


def _pick(select: Callable[[Any, Any], Any], builtin: Callable[..., Any]):
    """``max``/``min`` over arguments that may be tensors: Python's pairwise pick, staged."""

    def staged(*args: Any, **kwargs: Any) -> Any:
        items = args[0] if len(args) == 1 else args
        if kwargs or isinstance(items, Tensor) or not any(isinstance(a, Tensor) for a in items):
            return builtin(*args, **kwargs)
        return functools.reduce(select, items)

    return staged


def _greater_of(best: Any, candidate: Any) -> Any:
    # Python's max keeps the first of equal items and replaces it only when `candidate > best`.
    return _either(candidate > best, candidate, best)


def _lesser_of(best: Any, candidate: Any) -> Any:
    return _either(candidate < best, candidate, best)


def _either(take_candidate: Any, candidate: Any, best: Any) -> Any:
    if not isinstance(take_candidate, Tensor):
        return candidate if take_candidate else best
    dtype = np.result_type(*(v.dtype if isinstance(v, Tensor) else v for v in (candidate, best)))
    return cond(take_candidate, lambda: _as(candidate, dtype), lambda: _as(best, dtype))


def _as(value: Any, dtype: np.dtype) -> Any:
    if isinstance(value, Tensor):
        return value if value.dtype == dtype else value.astype(dtype)
    return np.asarray(value, dtype=dtype)[()]


staged_max = _pick(_greater_of, builtins.max)
staged_min = _pick(_lesser_of, builtins.min)

STAGED_BUILTINS: dict[Any, Callable[..., Any]] = {
    builtins.int: staged_int,
    builtins.float: staged_float,
    builtins.round: staged_round,
    builtins.max: staged_max,
    builtins.min: staged_min,
}
