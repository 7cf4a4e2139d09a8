"""Get a function's source and parse it with gast, keeping the user's file, lines and columns."""

from __future__ import annotations

import ast
import inspect
import linecache
import os
import re
import textwrap
import types
from dataclasses import dataclass
from typing import cast

import gast

from dy2st.errors import ConversionError, SourceLocation
from dy2st.frontend.code_match import compiled_by_python_from_its_file, compiles_to, function_def, mangling_class


class SourceChangedError(ConversionError):
    """The function's file changed since its module was imported: the source found there is not
    the code that runs, so converting it would not give the function's results."""


@dataclass(frozen=True)
class SourceInfo:
    """Where a parsed function came from.

    Attributes:
        filename: the user's file (as in ``co_filename``).
        line_offset: add to a parsed line number to get the line in the file.
        col_offset: the indentation removed by dedenting, added back to columns.
        name: the function's name.
        class_name: the class whose name mangles the function's private names (``self.__w`` in
            a method of ``Net`` is ``self._Net__w``), when it has any; else None.
        class_cell: the function is a method that reads its class's ``__class__`` cell (it
            calls ``super()`` without arguments).
    """

    filename: str
    line_offset: int
    col_offset: int
    name: str
    class_name: str | None = None
    class_cell: bool = False

    def location(self, node) -> SourceLocation:
        """The user's location of a parsed (not yet offset) node."""
        lineno = getattr(node, "lineno", 1) + self.line_offset
        col = getattr(node, "col_offset", None)
        return SourceLocation(self.filename, lineno, None if col is None else col + self.col_offset)


def parse_function(fn) -> tuple[gast.Module, gast.FunctionDef, SourceInfo]:
    """Parse ``fn``'s source into a gast module holding one FunctionDef without decorators.

    The source is parsed where it stands in the user's file: blank lines stand in for the lines
    above it and, for an indented function (a method, a nested function), an ``if 1:`` header
    takes the indentation. Every node then has the user's line and column, so the compiled code
    needs no shifting (the ``SourceInfo`` offsets are zero), and the definition can be compiled
    again and compared with the code that runs (``SourceChangedError`` when they differ).
    """
    code = getattr(fn, "__code__", None)
    filename = code.co_filename if code is not None else "<unknown>"
    if code is not None and code.co_name == "<lambda>":
        return _as_module(lambda_as_def(find_lambda(fn, code)), filename, code)
    try:
        module, in_place, start = _parse_source(fn)
    except (OSError, TypeError) as e:
        raise ConversionError(
            f"cannot read the source of {getattr(fn, '__qualname__', fn)!r}: {e}",
            SourceLocation(filename, code.co_firstlineno) if code is not None else None,
            "dy2st converts functions defined in files (not in an interactive session or by exec)",
        ) from None
    except SyntaxError as e:
        if code is not None and compiled_by_python_from_its_file(fn):
            raise source_changed(fn, code) from None  # it compiled when it was imported
        raise ConversionError(
            f"cannot parse the source of {fn.__qualname__}: {e.msg}", SourceLocation(filename, e.lineno or 1)
        ) from None
    if in_place and code is not None:
        check_unchanged(fn, code, module.body[0] if len(module.body) == 1 else None)
    funcs = [n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if len(funcs) != 1 or isinstance(funcs[0], ast.AsyncFunctionDef):
        raise ConversionError(
            f"{fn.__qualname__} is not a plain 'def' function (async functions cannot be converted)",
            SourceLocation(filename, start),
        )
    func = funcs[0]
    # The decorators ran already (one of them is to_static); running them again would recurse.
    func.decorator_list = []
    return _as_module(func, filename, code)


def _as_module(
    func: ast.FunctionDef, filename: str, code: types.CodeType | None
) -> tuple[gast.Module, gast.FunctionDef, SourceInfo]:
    tree = gast.ast_to_gast(ast.Module([func], []))
    class_name = mangling_class(code) if code is not None else None
    class_cell = code is not None and "__class__" in code.co_freevars
    return tree, tree.body[0], SourceInfo(filename, 0, 0, func.name, class_name, class_cell)


def find_lambda(fn, code: types.CodeType) -> ast.Lambda:
    """The lambda expression ``fn`` was made from, found in its file.

    A lambda's code records only the line it starts on, and a line may hold several lambdas, so
    the file is parsed and each lambda starting on that line is compiled and compared with the
    code (their columns differ, so at most one matches). Where that proves nothing (code Python
    did not compile from the file as it stands) a single lambda on the line is taken as it.
    """
    where = SourceLocation(code.co_filename, code.co_firstlineno)
    linecache.checkcache(code.co_filename)
    lines = linecache.getlines(code.co_filename, getattr(fn, "__globals__", None))
    if not lines:
        raise ConversionError(
            "cannot read the source of the lambda: it was not defined in a file",
            where,
            "dy2st converts functions defined in files (not in an interactive session or by exec)",
        )
    try:
        tree = ast.parse("".join(lines))
    except SyntaxError:
        tree = ast.Module([], [])  # no lambda matches, as when the lambda was edited away
    candidates = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda) and n.lineno == code.co_firstlineno]
    matching = [n for n in candidates if compiles_to(n, code, fn.__globals__)]
    if len(matching) == 1:
        return matching[0]
    if compiled_by_python_from_its_file(fn):
        raise source_changed(fn, code)
    if len(candidates) == 1:
        return candidates[0]
    raise ConversionError(
        f"cannot tell which of the {len(candidates)} lambdas on line {code.co_firstlineno} this is"
        if candidates
        else f"no lambda starts on line {code.co_firstlineno}, where this lambda's code says it does",
        where,
        "define the function with 'def' (or give the lambda a line of its own)",
    )


def lambda_as_def(node: ast.Lambda) -> ast.FunctionDef:
    """``lambda args: body`` as ``def <lambda>(args): return body``, at the lambda's lines and
    columns; compiled, it has the lambda's name, so tracebacks read as for the lambda."""
    body = ast.copy_location(ast.Return(node.body), node.body)
    return ast.copy_location(function_def("<lambda>", node.args, [body]), node)


def check_unchanged(fn, code: types.CodeType, node: ast.stmt | None) -> None:
    """Raise ``SourceChangedError`` when the definition found for ``fn`` (``node``; None when the
    text found is not one statement) does not compile to ``fn``'s code.

    Only code Python compiled from the file itself is checked: for other code (rewritten by an
    import hook, made by exec or by dy2st) a difference would prove nothing.
    """
    if not compiled_by_python_from_its_file(fn):
        return
    if not (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and compiles_to(node, code, fn.__globals__)):
        raise source_changed(fn, code)


def source_changed(fn, code: types.CodeType) -> SourceChangedError:
    """The error for ``fn`` whose file no longer holds the source of the code that runs."""
    module = getattr(fn, "__module__", None) or "its module"
    return SourceChangedError(
        f"{os.path.basename(code.co_filename)} changed since module {module!r} was imported: the source of "
        f"{code.co_qualname!r} found there is not the code that runs",
        SourceLocation(code.co_filename, code.co_firstlineno),
        f"reload the module (importlib.reload({module}), or restart the interpreter) so that it runs what "
        f"the file says, then convert {code.co_qualname!r} again",
    )


def _parse_source(fn) -> tuple[ast.Module, bool, int]:
    """The parsed source of ``fn``, whether it was parsed in place (see ``_parse_in_place``),
    and its first line.

    ``inspect.getsourcelines`` tokenizes the function to find where it ends, most of the cost of
    reading its source. The lines are taken from ``linecache`` instead, up to the first code line
    indented no deeper than the ``def``; a construct continuing below that indentation (a string,
    a bracket) then does not parse, and ``inspect`` delimits the function after all.
    """
    guessed = _guess_source_lines(fn)
    if guessed is not None:
        try:
            return (*_parse_in_place(*guessed), guessed[1])
        except SyntaxError:
            pass
    # Given the code object, inspect reads the function's own source: given a function made by
    # functools.wraps, it would follow __wrapped__ to the function the decorator wraps.
    lines, start = inspect.getsourcelines(getattr(fn, "__code__", fn))
    return (*_parse_in_place(lines, start), start)


def _parse_in_place(lines: list[str], start: int) -> tuple[ast.Module, bool]:
    """Parse ``lines`` (the function's, from line ``start`` of its file) at their own lines and
    columns; the flag is False when the columns had to lose the indentation instead."""
    source = "".join(lines)
    if _indent_width(source) == 0:
        return ast.parse("\n" * (start - 1) + source), True
    if start < 2:  # no line above for the header (not a file Python imported): columns lose the indent
        return ast.parse(textwrap.dedent(source)), False
    module = ast.parse("\n" * (start - 2) + "if 1:\n" + source)
    module.body = cast(ast.If, module.body[0]).body
    return module, True


_DEF_LINE = re.compile(r"\s*(async\s+)?def\s")
_DEF_OR_DECORATOR = re.compile(r"\s*(@|(async\s+)?def\s)")


def _guess_source_lines(fn) -> tuple[list[str], int] | None:
    """The lines of ``fn`` from its file, ending where its indentation ends (None: ask inspect)."""
    code = getattr(fn, "__code__", None)
    globals_ = getattr(fn, "__globals__", None)
    if code is None or globals_ is None:
        return None
    linecache.checkcache(code.co_filename)
    lines = linecache.getlines(code.co_filename, globals_)
    first = code.co_firstlineno - 1
    if not 0 <= first < len(lines) or not _DEF_OR_DECORATOR.match(lines[first]):
        return None
    def_line = first
    while not _DEF_LINE.match(lines[def_line]):  # past the decorators
        def_line += 1
        if def_line == len(lines):
            return None
    indent = _indent_width(lines[def_line])
    for end in range(def_line + 1, len(lines)):
        text = lines[end].lstrip()
        # Blank lines and comments do not end a block; nor does a line opening with a closing
        # bracket, such as the ``):`` of a signature written one parameter per line.
        if text and text[0] not in "#)]}" and len(lines[end]) - len(text) <= indent:
            return lines[first:end], first + 1
    return lines[first:], first + 1


def _indent_width(text: str) -> int:
    for line in text.splitlines():
        if line.strip():
            return len(line) - len(line.lstrip())
    return 0
