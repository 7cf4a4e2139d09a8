"""Converted functions: the frontend's converted code bound to the runtime's globals.

The frontend stops at a code object (``frontend.convert.convert_code``). Running it needs globals
that resolve the original function's globals and closure variables and turn global arrays into
graph captures (``FunctionGlobals``); this module binds the two into a plain Python function with
the original's name, defaults and docstring.
"""

from __future__ import annotations

import types
import weakref
from collections.abc import Callable
from typing import Any

from dy2st.frontend.convert import convert_code
from dy2st.runtime.captures import FunctionGlobals

_FUNCTION_CACHE: weakref.WeakKeyDictionary[object, types.FunctionType] = weakref.WeakKeyDictionary()

# Classes whose instances wrap a Python function to convert (api.StaticFunction and its bound
# form): type -> a function returning what a call inside converted code should call instead.
# The api layer registers them, so the runtime never imports it.
_WRAPPER_TYPES: dict[type, Callable[[Any], Any]] = {}


def register_wrapper_type(cls: type, unwrap: Callable[[Any], Any]) -> None:
    """Calls to instances of ``cls`` in converted code run ``unwrap(instance)`` (converted)."""
    _WRAPPER_TYPES[cls] = unwrap


def unwrap_converted(f: Any) -> Any | None:
    """The converted callable behind a registered wrapper (a ``to_static`` function), else None."""
    unwrap = _WRAPPER_TYPES.get(type(f))
    return None if unwrap is None else unwrap(f)


def converted_function(fn: types.FunctionType) -> types.FunctionType:
    """The converted version of the plain Python function ``fn`` (cached per function object, as
    long as it keeps its code: reloading tools such as IPython's autoreload replace ``__code__``)."""
    try:
        cached = _FUNCTION_CACHE[fn]
        if cached.__dict__["__dy2st_original_code__"] is fn.__code__:
            return cached
    except (KeyError, TypeError):
        pass
    converted = convert_code(fn)
    new = types.FunctionType(converted.code, FunctionGlobals(fn), fn.__name__, fn.__defaults__)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__ = fn.__qualname__
    new.__doc__ = fn.__doc__
    # Not the original function itself: the cache's value would keep its key alive, and with it
    # everything the function closes over.
    new.__dict__["__dy2st_original_code__"] = fn.__code__
    try:
        _FUNCTION_CACHE[fn] = new
    except TypeError:
        pass
    return new
