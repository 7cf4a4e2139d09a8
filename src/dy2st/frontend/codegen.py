"""Regenerate Python source (astor) and compile transformed trees with the user's locations."""

from __future__ import annotations

import ast

import astor
import gast

from dy2st.frontend.parser import SourceInfo


def to_source(tree: gast.AST) -> str:
    """The transformed tree as Python source, as ``dy2st dump`` and ``.code`` show it."""
    return astor.to_source(gast.gast_to_ast(tree))


def compile_tree(tree: gast.Module, info: SourceInfo):
    """Compile the module and return the code object of the function it defines.

    Line numbers are shifted back to the user's file and the code is compiled with the user's
    file name, so tracebacks and error locations point at the original source.
    """
    module = gast.gast_to_ast(tree)
    ast.fix_missing_locations(module)
    for node in ast.walk(module):
        if hasattr(node, "lineno") and node.lineno is not None:
            node.lineno += info.line_offset
            if getattr(node, "end_lineno", None) is not None:
                node.end_lineno += info.line_offset
            if getattr(node, "col_offset", None) is not None:
                node.col_offset += info.col_offset
            if getattr(node, "end_col_offset", None) is not None:
                node.end_col_offset += info.col_offset
    namespace: dict = {}
    exec(compile(module, info.filename, "exec"), namespace)
    return namespace[info.name].__code__
