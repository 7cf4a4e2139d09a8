"""``convert_call`` and ``convert_print``: what calls in converted code go through."""

from __future__ import annotations

import builtins
import functools
import inspect
import os
import sysconfig
import types
from typing import Any

from dy2st.errors import ConversionError
from dy2st.runtime.functions import converted_function, unwrap_converted
from dy2st.ops.structural import PRINT, Literal
from dy2st.staging.builder import current_builder
from dy2st.staging.tensor import Tensor, apply_effect


@functools.lru_cache(maxsize=None)
def library_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    dy2st_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return tuple(os.path.abspath(d) + os.sep for d in dirs) + (dy2st_dir + os.sep,)


def is_user_function(fn: Any) -> bool:
    """True for a plain Python function from the user's code (not NumPy, stdlib or dy2st)."""
    if not isinstance(fn, types.FunctionType) or fn.__name__ == "<lambda>":
        return False
    module = getattr(fn, "__module__", "") or ""
    if module.split(".")[0] in ("numpy", "dy2st"):
        return False
    filename = os.path.abspath(fn.__code__.co_filename)
    if fn.__code__.co_filename.startswith("<"):
        return False
    return not filename.startswith(library_dirs())


def convert_call(f: Any) -> Any:
    """What a call to ``f`` inside a converted function actually calls."""
    from dy2st.staging.handlers import CREATION_HANDLERS
    from dy2st.ops.creation import register_random_refusals

    if current_builder() is None:
        return f
    wrapped = unwrap_converted(f)
    if wrapped is not None:
        return wrapped
    if f is builtins.print:
        return convert_print
    register_random_refusals()
    try:
        staged = CREATION_HANDLERS.get(f)
    except TypeError:  # unhashable callables
        staged = None
    if staged is not None:
        return staged
    if inspect.ismethod(f) and is_user_function(f.__func__):
        return types.MethodType(_convert_or_keep(f.__func__), f.__self__)
    if is_user_function(f):
        return _convert_or_keep(f)
    return f


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
    if file is not None or current_builder() is None:
        return builtins.print(*args, sep=sep, end=end, file=file, flush=flush)
    template = tuple(None if isinstance(a, Tensor) else Literal(a) for a in args)
    apply_effect(PRINT, *(a for a in args if isinstance(a, Tensor)), template=template, sep=sep, end=end)
    return None
