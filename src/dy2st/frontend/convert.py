"""Convert a Python function's code: parse, run the converter pipeline, regenerate and compile.

The frontend stops at the compiled code object. The runtime binds it to globals that resolve the
original function's globals and closure variables (``dy2st.runtime.functions``).
"""

from __future__ import annotations

import ast
import types
from functools import cached_property
from typing import cast

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


# Keyed by the code object and its file: code objects compile equal (and hash alike) across files
# when their text and lines are, but converted code carries its file name into every error.
_CODE_CACHE: dict[tuple[types.CodeType, str], ConvertedCode] = {}


def _cache_key(fn: types.FunctionType) -> tuple[types.CodeType, str]:
    return fn.__code__, fn.__code__.co_filename


def convert_code(fn) -> ConvertedCode:
    """Transform ``fn``'s source (cached per code object and file)."""
    cached = _CODE_CACHE.get(_cache_key(fn))
    if cached is not None:
        return cached
    module, func, info = parse_function(fn)
    ctx = Context(info, Namer.for_tree(module))
    check_unsupported(module, ctx)
    tree = cast(ast.Module, to_ast(run_pipeline(module, ctx)))
    result = ConvertedCode(tree, compile_tree(tree, info), info)
    _CODE_CACHE[_cache_key(fn)] = result
    return result
