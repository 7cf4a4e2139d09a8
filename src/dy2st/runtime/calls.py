"""``convert_call`` and ``convert_print``: what calls in converted code go through."""

from __future__ import annotations

import builtins
import functools
import inspect
import types
from typing import Any

import numpy as np

from dy2st.errors import ConversionError
from dy2st.ops.structural import PRINT, Formatted, Literal
from dy2st.runtime.builtin_calls import STAGED_BUILTINS
from dy2st.runtime.captures import set_call_converter
from dy2st.runtime.errstate import staged_errstate
from dy2st.runtime.functions import converted_function, unwrap_converted
from dy2st.runtime.random_draws import staged_random_call
from dy2st.runtime.recursion import watch_recursion
from dy2st.runtime.user_code import is_user_function
from dy2st.staging.builder import FORMAT_MARK, GraphBuilder, current_builder
from dy2st.staging.handlers import CREATION_HANDLERS, FALLBACKS
from dy2st.staging.tensor import Tensor, apply_effect


def convert_call(f: Any) -> Any:
    """What a call to ``f`` inside a converted function actually calls: user functions converted
    (and watched for recursion that depends on a tensor, ``runtime/recursion.py``), builtins and
    NumPy functions with a staged form replaced by it, anything else ``f`` itself."""
    builder = current_builder()
    if builder is None:
        return f
    wrapped = unwrap_converted(f)
    if wrapped is not None:
        return watch_recursion(wrapped, builder)
    staged = _staged_library_call(f, builder)
    if staged is not None:
        return staged
    if inspect.ismethod(f) and is_user_function(f.__func__):
        return watch_recursion(types.MethodType(_convert_or_keep(f.__func__), f.__self__), builder)
    if is_user_function(f):
        return watch_recursion(_convert_or_keep(f), builder)
    if isinstance(f, functools.partial):  # the partial's function converts as it would called alone
        inner = convert_call(f.func)
        return f if inner is f.func else functools.partial(inner, *f.args, **f.keywords)
    return f


def _staged_library_call(f: Any, builder: GraphBuilder) -> Any:
    """The staged form of a builtin or NumPy callable ``f``, or None."""
    if f is builtins.print:
        return convert_print
    if f is np.errstate:
        return staged_errstate(builder)
    return (
        _lookup(STAGED_BUILTINS, f) or staged_random_call(f) or _lookup(CREATION_HANDLERS, f) or FALLBACKS["object"](f)
    )


def _lookup(table: dict[Any, Any], f: Any) -> Any:
    try:
        return table.get(f)
    except TypeError:  # unhashable callables
        return None


def _convert_or_keep(fn):
    try:
        return converted_function(fn)
    except ConversionError as e:
        if type(e) is ConversionError:  # source unavailable: Python-only code still works
            return fn
        raise


def convert_print(*args, sep=" ", end="\n", file=None, flush=False):
    """``print`` while a graph is built: a print op that prints at every run, as the eager function
    prints at every call (also when no argument is a tensor). ``file=`` prints at build time."""
    builder = current_builder()
    if file is not None or builder is None:
        return builtins.print(*args, sep=sep, end=end, file=file, flush=flush)
    template: list[Any] = []
    tensors: list[Tensor] = []
    for a in args:
        if isinstance(a, Tensor):
            template.append(None)
            tensors.append(a)
        elif isinstance(a, str) and FORMAT_MARK in a:
            template.append(Formatted(builder.formatted_pieces(a, tensors)))
        else:
            template.append(Literal(a))
    apply_effect(PRINT, *tensors, template=tuple(template), sep=sep, end=end)
    return None


# A callable user object captured by a converted function calls back into converted code.
set_call_converter(convert_call)
