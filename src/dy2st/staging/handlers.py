"""Handler tables: how NumPy entry points reach the ops that stage them.

NumPy entry points (ufuncs, functions reached through ``__array_function__``, ndarray methods and
properties, array-creation functions) are mapped to *handlers*: Python functions that take the
user's arguments and emit ops. The tracer (``Tensor``, ``dispatch``) looks handlers up here; the op
families in ``dy2st.ops`` register them with the decorators below, so the tracer never imports
the ops.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# NumPy callables (functions reached through __array_function__ or called directly on tensors
# through convert_call) -> handler(*args, **kwargs) that emits ops and returns Tensors.
FUNCTION_HANDLERS: dict[Any, Callable[..., Any]] = {}

# ndarray method and property names -> handler(tensor, *args, **kwargs).
METHOD_HANDLERS: dict[str, Callable[..., Any]] = {}
PROPERTY_HANDLERS: dict[str, Callable[..., Any]] = {}

# ufunc methods staged by a rule of the ops (``outer(ufunc, a, b)`` for ``np.add.outer(a, b)``).
UFUNC_METHOD_HANDLERS: dict[str, Callable[..., Any]] = {}

# The indexing family's entry points, under these keys: ``read(tensor, index)`` and
# ``write(tensor, index, value)`` stage ``x[i]`` and ``x[i] = v``.
INDEXING: dict[str, Callable[..., Any]] = {}

# The generic layer (``dy2st.ops.generic``): what stages a NumPy call no handler above takes.
# ``function(func, args, kwargs)``, ``method(name, tensor, args, kwargs)``,
# ``ufunc(ufunc, method, inputs, kwargs)``; ``is_method(name)`` says whether ndarray has a
# method of that name; ``object(func)`` is how a converted function calls a NumPy callable object
# the program made (``np.vectorize(f)``), or None for any other callable;
# ``writes_argument(func, kwargs)`` says whether a call writes into one of its arguments.
FALLBACKS: dict[str, Callable[..., Any]] = {}

# NumPy functions that create arrays without array arguments (np.zeros, np.arange, ...): inside a
# converted function, convert_call swaps them for these staged versions.
CREATION_HANDLERS: dict[Any, Callable[..., Any]] = {}


def handles(*numpy_functions: Any) -> Callable:
    """Decorator: register ``fn`` as the handler of these NumPy functions."""

    def decorate(fn: Callable) -> Callable:
        for f in numpy_functions:
            FUNCTION_HANDLERS[f] = fn
        return fn

    return decorate


def method(*names: str) -> Callable:
    """Decorator: register ``fn(tensor, ...)`` as the handler of these ndarray methods."""

    def decorate(fn: Callable) -> Callable:
        for n in names:
            METHOD_HANDLERS[n] = fn
        return fn

    return decorate


def prop(*names: str) -> Callable:
    """Decorator: register ``fn(tensor)`` as the handler of these ndarray properties."""

    def decorate(fn: Callable) -> Callable:
        for n in names:
            PROPERTY_HANDLERS[n] = fn
        return fn

    return decorate


# ndarray attributes whose assignment in user code Tensor intercepts with a data descriptor (a
# ``__setattr__`` would slow down every internal attribute write): NumPy's writable attributes
# (``x.real = v``, ``x.shape = s``, ...), ``data`` (writable before NumPy 2.4) and the read-only
# ones, whose assignment NumPy refuses with an AttributeError. An op family registers what
# assigning each does with ``@setter``; assigning one without a setter is refused.
ASSIGNED_ATTRIBUTES = (
    *("real", "imag", "shape", "dtype", "strides", "data", "flat"),
    *("T", "mT", "ndim", "size", "itemsize", "nbytes", "base", "flags", "ctypes", "device"),
)
ATTRIBUTE_SETTERS: dict[str, Callable[[Any, Any], None]] = {}

# Questions about the user's program that only the runtime can answer, because it sees the user's
# frames; the runtime registers them here so that op families below it can ask. Under the key
# ``other_references``: ``fn(tensor) -> str | None`` says what besides one variable of the user's
# code can reach the array object (the caller, other variables, containers, views), or None.
RUNTIME_QUERIES: dict[str, Callable[..., Any]] = {}


def setter(*names: str) -> Callable:
    """Decorator: register ``fn(tensor, value)`` as what assigning these ndarray attributes does."""

    def decorate(fn: Callable) -> Callable:
        for n in names:
            if n not in ASSIGNED_ATTRIBUTES:
                raise KeyError(f"ndarray attribute {n!r} has no data descriptor on Tensor (ASSIGNED_ATTRIBUTES)")
            ATTRIBUTE_SETTERS[n] = fn
        return fn

    return decorate
