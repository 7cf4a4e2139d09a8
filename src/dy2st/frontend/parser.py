"""Get a function's source and parse it with gast, keeping the user's file, lines and columns."""

from __future__ import annotations

import inspect
import textwrap
from dataclasses import dataclass

import gast

from dy2st.errors import ConversionError, SourceLocation


@dataclass(frozen=True)
class SourceInfo:
    """Where a parsed function came from.

    Attributes:
        filename: the user's file (as in ``co_filename``).
        line_offset: add to a parsed line number to get the line in the file.
        col_offset: the indentation removed by dedenting, added back to columns.
        name: the function's name.
    """

    filename: str
    line_offset: int
    col_offset: int
    name: str

    def location(self, node) -> SourceLocation:
        """The user's location of a parsed (not yet offset) node."""
        lineno = getattr(node, "lineno", 1) + self.line_offset
        col = getattr(node, "col_offset", None)
        return SourceLocation(self.filename, lineno, None if col is None else col + self.col_offset)


def parse_function(fn) -> tuple[gast.Module, gast.FunctionDef, SourceInfo]:
    """Parse ``fn``'s source into a gast module holding one FunctionDef without decorators."""
    code = getattr(fn, "__code__", None)
    filename = code.co_filename if code is not None else "<unknown>"
    if getattr(fn, "__name__", None) == "<lambda>":
        # Checked before reading the source: a lambda's source lines are the whole enclosing
        # statement, which often does not parse on its own and would give a misleading error.
        raise ConversionError(
            "a lambda cannot be converted",
            SourceLocation(filename, code.co_firstlineno) if code is not None else None,
            "define the function with 'def' and decorate it with @dy2st.to_static",
        )
    try:
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise ConversionError(
            f"cannot read the source of {getattr(fn, '__qualname__', fn)!r}: {e}",
            SourceLocation(filename, code.co_firstlineno) if code is not None else None,
            "dy2st converts functions defined in files (not in an interactive session or by exec)",
        ) from None
    source = "".join(lines)
    dedented = textwrap.dedent(source)
    indent = _indent_width(source) - _indent_width(dedented)
    try:
        module = gast.parse(dedented)
    except SyntaxError as e:
        raise ConversionError(f"cannot parse the source of {fn.__qualname__}: {e.msg}",
                              SourceLocation(filename, start + (e.lineno or 1) - 1)) from None
    funcs = [n for n in module.body if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef))]
    if len(funcs) != 1 or isinstance(funcs[0], gast.AsyncFunctionDef):
        raise ConversionError(
            f"{fn.__qualname__} is not a plain 'def' function (lambdas and async functions cannot be converted)",
            SourceLocation(filename, start),
        )
    func = funcs[0]
    # The decorators ran already (one of them is to_static); running them again would recurse.
    func.decorator_list = []
    module.body = [func]
    return module, func, SourceInfo(filename, start - 1, indent, func.name)


def _indent_width(text: str) -> int:
    for line in text.splitlines():
        if line.strip():
            return len(line) - len(line.lstrip())
    return 0
