"""Convert a Python function: parse, run the converter pipeline, regenerate and compile.

The converted function is a plain Python function over the same arguments. Run on symbolic tensors
it stages a graph; its globals are a ``FunctionGlobals`` mapping that also resolves the original
closure variables and turns global arrays into graph captures.
"""

from __future__ import annotations

import ast
import types
import weakref
from functools import cached_property

from dy2st.frontend.codegen import ast_to_source, compile_tree, to_ast
from dy2st.frontend.naming import Namer
from dy2st.frontend.parser import SourceInfo, parse_function
from dy2st.frontend.transformer import Context
from dy2st.frontend.transformers import run_pipeline
from dy2st.frontend.transformers.unsupported import check as check_unsupported


class ConvertedCode:
    """The result of converting one function's code (shared by every closure instance).

    Attributes:
        code: the compiled code object of the converted function.
        info: where the function's source came from.
        source: the transformed Python source, generated on first access (only introspection
            such as ``.code`` and ``dy2st dump`` reads it; running compiles the tree directly).
    """

    def __init__(self, tree: ast.Module, code: types.CodeType, info: SourceInfo):
        self._tree = tree
        self.code = code
        self.info = info

    @cached_property
    def source(self) -> str:
        return ast_to_source(self._tree)


_CODE_CACHE: dict[types.CodeType, ConvertedCode] = {}
_FUNCTION_CACHE: "weakref.WeakKeyDictionary[object, types.FunctionType]" = weakref.WeakKeyDictionary()


def convert_code(fn) -> ConvertedCode:
    """Transform ``fn``'s source (cached per code object)."""
    cached = _CODE_CACHE.get(fn.__code__)
    if cached is not None:
        return cached
    module, func, info = parse_function(fn)
    ctx = Context(info, Namer.for_tree(module))
    check_unsupported(module, ctx)
    tree = to_ast(run_pipeline(module, ctx))
    result = ConvertedCode(tree, compile_tree(tree, info), info)
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
