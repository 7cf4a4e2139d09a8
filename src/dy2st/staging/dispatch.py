"""Entry points from NumPy's protocols into the op registry.

``__array_ufunc__`` and ``__array_function__`` of a symbolic tensor land here. A call with a
registered handler emits ops; a call without one runs eagerly when every tensor argument is a
build-time literal (see ``literal_values``) and it writes into no argument, and otherwise goes to
the generic layer (``FALLBACKS``, ``dy2st.ops.generic``), which raises ``UnsupportedOpError``
naming the function and the user's line where it cannot stage the call either.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from dy2st.errors import GraphBuildError, user_location
from dy2st.ir.opdefs import UFUNC_OPS
from dy2st.staging.handlers import FALLBACKS, FUNCTION_HANDLERS, UFUNC_METHOD_HANDLERS
from dy2st.staging.literal_values import literal_arguments

# ufunc.reduce spellings staged as the NumPy reduction function that computes the same.
_REDUCE_AS = {
    np.add: np.sum,
    np.multiply: np.prod,
    np.maximum: np.max,
    np.minimum: np.min,
    np.logical_and: np.all,
    np.logical_or: np.any,
}

_NOT_GIVEN = object()


def numpy_name(func: Any) -> str:
    """``np.linalg.inv`` for numpy.linalg.inv: how the user most likely spelled the function."""
    name = getattr(func, "__name__", repr(func))
    module = getattr(func, "__module__", None) or "numpy"
    if module == "numpy" or module.startswith("numpy._"):
        return f"np.{name}"
    if module.startswith("numpy."):
        return f"np.{module[len('numpy.') :]}.{name}"
    return f"{module}.{name}"


def _eagerly_on_literals(func, args: tuple, kwargs: dict) -> Any:
    """``func`` run eagerly if every tensor argument is a build-time literal, else ``_NOT_GIVEN``.
    Never for a call that writes into an argument (``np.add.at(y, ...)``, ``np.fill_diagonal``,
    ``out=``): it would write into a copy of the literal, and the graph's array would not change."""
    if FALLBACKS["writes_argument"](func, kwargs):
        return _NOT_GIVEN
    concrete = literal_arguments(args, kwargs)
    if concrete is None:
        return _NOT_GIVEN
    try:
        return func(*concrete[0], **concrete[1])
    except Exception as e:  # NumPy's own complaint, at the user's line
        raise GraphBuildError(f"{numpy_name(func)}: {type(e).__name__}: {e}", user_location()) from e


def call_ufunc(ufunc, method: str, inputs, kwargs):
    """``__array_ufunc__``: stage ``ufunc`` (plain call or ``reduce``) on symbolic inputs."""
    from dy2st.staging.tensor import apply  # the tracer's own recursion: tensor.py imports this module

    if kwargs.get("out", None) is None:
        kwargs.pop("out", None)
    if method == "__call__":
        opname = UFUNC_OPS.get(ufunc)
        if opname is not None and not kwargs:
            return apply(opname, *inputs)
        result = _eagerly_on_literals(ufunc, inputs, kwargs)
        if result is not _NOT_GIVEN:
            return result
        return _generic("ufunc", ufunc, method, inputs, kwargs)
    if method == "outer" and ufunc.nin == 2 and ufunc.nout == 1 and UFUNC_OPS.get(ufunc) and not kwargs:
        return UFUNC_METHOD_HANDLERS["outer"](ufunc, *inputs)
    handled = _staged_ufunc_method(ufunc, method, inputs, kwargs)
    if handled is not _NOT_GIVEN:
        return handled
    result = _eagerly_on_literals(getattr(ufunc, method), inputs, kwargs)
    if result is not _NOT_GIVEN:
        return result
    return _generic("ufunc", ufunc, method, inputs, kwargs)


def _staged_ufunc_method(ufunc, method: str, inputs, kwargs) -> Any:
    """``ufunc.at`` and ``ufunc.reduce`` staged by the rule of their family (``np.add.at`` by
    ``ops/indexing.py``, ``np.add.reduce`` as ``np.sum``), or ``_NOT_GIVEN``."""
    if method == "at":
        handler = UFUNC_METHOD_HANDLERS.get(f"{ufunc.__name__}.at")
        if handler is None or kwargs:
            return _NOT_GIVEN
        call = functools.partial(handler, *inputs)
    elif method == "reduce" and ufunc in _REDUCE_AS and "out" not in kwargs:
        call = functools.partial(FUNCTION_HANDLERS[_REDUCE_AS[ufunc]], *inputs, **{"axis": 0, **kwargs})
    else:
        return _NOT_GIVEN
    try:
        return call()
    except GraphBuildError as refused:
        return generic_or_raise(refused, "ufunc", ufunc, method, inputs, kwargs)


def call_function(func, args, kwargs):
    """``__array_function__``: stage a NumPy function on symbolic arguments."""
    handler = FUNCTION_HANDLERS.get(func)
    if handler is not None:
        try:
            return handler(*args, **kwargs)
        except GraphBuildError as refused:  # also UnsupportedOpError and TensorValueError
            # An option or a case the precise rule does not reproduce: NumPy itself, called when
            # the graph runs, does (or raises its own error, of eager's class, at this line).
            return generic_or_raise(refused, "function", func, args, kwargs)
    result = _eagerly_on_literals(func, args, kwargs)
    if result is not _NOT_GIVEN:
        return result
    return _generic("function", func, args, kwargs)


def _generic(kind: str, *call: Any) -> Any:
    """Stage the call with the generic layer (``dy2st.ops.generic``)."""
    return FALLBACKS[kind](*call)


def generic_or_raise(refused: GraphBuildError, kind: str, *call: Any) -> Any:
    """The generic layer's staging of a call a precise rule refused (an option it does not take,
    a tensor where it needs a Python value, a case it does not handle); where NumPy itself raises
    on the call, NumPy's error (eager's class), else the rule's refusal."""
    try:
        return _generic(kind, *call)
    except GraphBuildError as generic_error:
        if generic_error.numpy_error and not refused.numpy_error:
            raise generic_error from None
        raise refused from None
