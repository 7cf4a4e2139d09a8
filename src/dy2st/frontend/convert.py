"""Convert a Python function: parse, run the converter pipeline, regenerate and compile.

The converted function is a plain Python function over the same arguments. Run on symbolic tensors
it stages a graph; its globals are a ``FunctionGlobals`` mapping that also resolves the original
closure variables and turns global arrays into graph captures.
"""

from __future__ import annotations

import types
import weakref
from dataclasses import dataclass

from dy2st.frontend.codegen import compile_tree, to_source
from dy2st.frontend.naming import Namer
from dy2st.frontend.parser import SourceInfo, parse_function
from dy2st.frontend.transformer import Context
from dy2st.frontend.transformers import PIPELINE


@dataclass(frozen=True)
class ConvertedCode:
    """The result of converting one function's code (shared by every closure instance)."""

    source: str
    code: types.CodeType
    info: SourceInfo


_CODE_CACHE: dict[types.CodeType, ConvertedCode] = {}
_FUNCTION_CACHE: "weakref.WeakKeyDictionary[object, types.FunctionType]" = weakref.WeakKeyDictionary()


def convert_code(fn) -> ConvertedCode:
    """Transform ``fn``'s source (cached per code object)."""
    cached = _CODE_CACHE.get(fn.__code__)
    if cached is not None:
        return cached
    module, func, info = parse_function(fn)
    ctx = Context(info, Namer.for_tree(module))
    from dy2st.frontend.transformers.unsupported import check as check_unsupported

    check_unsupported(module, ctx)
    for converter in PIPELINE:
        module = converter.transform(module, ctx)
    result = ConvertedCode(to_source(module), compile_tree(module, info), info)
    _CODE_CACHE[fn.__code__] = result
    return result


def converted_function(fn) -> types.FunctionType:
    """The converted version of the plain Python function ``fn`` (cached per function object)."""
    try:
        return _FUNCTION_CACHE[fn]
    except (KeyError, TypeError):
        pass
    from dy2st.runtime.captures import FunctionGlobals

    converted = convert_code(fn)
    new = types.FunctionType(converted.code, FunctionGlobals(fn), fn.__name__, fn.__defaults__)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__ = fn.__qualname__
    new.__doc__ = fn.__doc__
    new.__dict__["__dy2st_original__"] = fn
    try:
        _FUNCTION_CACHE[fn] = new
    except TypeError:
        pass
    return new
