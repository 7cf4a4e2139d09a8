"""Regenerate Python source (astor) and compile transformed trees with the user's locations."""

from __future__ import annotations

import ast
import types
from typing import Any

import gast

from dy2st.frontend.code_match import remember_converted_code
from dy2st.frontend.parser import SourceInfo


def to_ast(tree: gast.AST) -> ast.AST:
    """The transformed gast tree as a standard ``ast`` tree (done once: both users below take it)."""
    return gast.gast_to_ast(tree)


def to_source(tree: gast.AST) -> str:
    """A gast tree as Python source."""
    return ast_to_source(to_ast(tree))


def ast_to_source(module: ast.AST) -> str:
    """The transformed tree as Python source, as ``dy2st dump`` and ``.code`` show it.

    Only introspection needs it, so ``convert_code`` calls it lazily: generating the text costs
    about 0.6 ms, more than a tenth of a first call. astor reads no locations, so the tree may
    already carry the user's line numbers.
    """
    import astor  # only introspection needs astor: keep it off the import and first-call path

    return astor.to_source(module)


def compile_tree(module: ast.Module, info: SourceInfo):
    """Compile the module and return the code object of the function it defines.

    Line numbers are shifted back to the user's file and the code is compiled with the user's
    file name, so tracebacks and error locations point at the original source.
    """
    ast.fix_missing_locations(module)
    if info.line_offset or info.col_offset:
        _shift_locations(module, info)
    # The function's code object is taken from the module's constants, not by running the module:
    # running it would evaluate the default values (``eps=EPS``) where the user's globals are not.
    module_code = compile(module, info.filename, "exec")
    for constant in module_code.co_consts:
        if isinstance(constant, types.CodeType) and constant.co_name == info.name:
            remember_converted_code(constant)  # functions it defines have this code, not the file's
            return constant
    raise KeyError(f"the converted module defines no function {info.name!r}")


def _shift_locations(module: ast.Module, info: SourceInfo) -> None:
    node: Any
    for node in ast.walk(module):
        if hasattr(node, "lineno") and node.lineno is not None:
            node.lineno += info.line_offset
            if getattr(node, "end_lineno", None) is not None:
                node.end_lineno += info.line_offset
            if getattr(node, "col_offset", None) is not None:
                node.col_offset += info.col_offset
            if getattr(node, "end_col_offset", None) is not None:
                node.end_col_offset += info.col_offset
