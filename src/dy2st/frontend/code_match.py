"""Does a definition found in a file compile to the code object that runs?

Python keeps no copy of the text it compiled a function from: ``inspect`` and ``linecache`` read
the file as it is now. When the file was edited after its module was imported, the text found
for a function is not the code that runs, and converting it would give results the function does
not give. ``compiles_to`` answers by compiling the found definition where the original was
compiled: inside its enclosing classes and functions (read from ``co_qualname``), with its free
variables bound there and its ``__future__`` flags. Code objects compare equal when their
bytecode, constants, names and line and column tables are, so any edit of the function's text,
or of the lines above it, makes them differ. One compile costs about 50 us for a 10-line function.

One more fact of the module reaches a function's bytecode: CPython compiles ``np.f(x)`` with a
plain attribute load when the module binds ``np`` by an ``import`` statement, and with a method
load otherwise. Global names holding modules are taken as imported first, which is nearly always
right; when that does not match, the other choices for the names called as ``N.f(...)`` are tried.
"""

from __future__ import annotations
import __future__

import ast
import functools
import importlib.machinery
import itertools
import operator
import sys
import types
from collections.abc import Iterator, Mapping
from typing import Any

FUTURE_FLAGS = functools.reduce(
    operator.or_, (getattr(__future__, name).compiler_flag for name in __future__.all_feature_names)
)

Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


def compiles_to(node: Definition, code: types.CodeType, globals_: Mapping[str, Any]) -> bool:
    """Does ``node`` (parsed at its own lines and columns of ``code``'s file) compile to ``code``?

    ``globals_`` are the function's globals: which of them hold modules (see the module's doc).
    """
    return any(_compile(node, code, imported) == code for imported in _imported_name_guesses(node, code, globals_))


def _compile(node: Definition, code: types.CodeType, imported: frozenset[str]) -> types.CodeType | None:
    """``node`` compiled inside the scopes of ``code``, in a module importing ``imported``."""
    module = _in_enclosing_scopes(node, code)
    module.body[:0] = [_located(ast.Import([_located(ast.alias(name), node)]), node) for name in sorted(imported)]
    try:
        compiled = compile(module, code.co_filename, "exec", flags=code.co_flags & FUTURE_FLAGS, dont_inherit=True)
    except (SyntaxError, ValueError, TypeError):
        return None
    return _find_code(compiled, code.co_qualname, code.co_firstlineno)


_MAX_GUESSED_NAMES = 4  # every choice for up to this many names called as N.f(...) (16 compiles at most)


def _imported_name_guesses(
    node: Definition, code: types.CodeType, globals_: Mapping[str, Any]
) -> Iterator[frozenset[str]]:
    """Sets of names the module may bind by ``import``, the likeliest first: the globals the
    function reads that hold modules; then choices for the globals it calls methods on."""
    modules = frozenset(n for n in _names_read(code) if isinstance(globals_.get(n), types.ModuleType))
    yield modules
    called = sorted(n for n in _method_call_bases(node) if n in globals_)
    if len(called) > _MAX_GUESSED_NAMES:
        choices: Iterator[tuple[str, ...]] = iter([(), tuple(called)])
    else:
        choices = itertools.chain.from_iterable(itertools.combinations(called, r) for r in range(len(called) + 1))
    untouched = modules - set(called)
    for chosen in choices:
        imported = untouched | frozenset(chosen)
        if imported != modules:
            yield imported


def _names_read(code: types.CodeType) -> set[str]:
    """The global and attribute names of ``code`` and the code nested in it."""
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= _names_read(constant)
    return names


def _method_call_bases(node: ast.AST) -> set[str]:
    """The names ``N`` of the calls ``N.f(...)`` in ``node``."""
    return {
        n.func.value.id
        for n in ast.walk(node)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
    }


def compiled_by_python_from_its_file(fn: Any) -> bool:
    """Was ``fn`` compiled by Python's own source loader from the file its code names?

    Then a definition there that does not compile to its code means the file changed since the
    module was imported. Import hooks compile code that differs from the text (pytest rewrites
    ``assert`` statements in test modules), code made by ``exec`` may come from any text, and a
    function defined inside a converted function has converted code, so for those a difference
    proves nothing.
    """
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    return (
        type(getattr(module, "__loader__", None)) is importlib.machinery.SourceFileLoader
        and getattr(module, "__file__", None) == fn.__code__.co_filename
        and fn.__code__ not in _CONVERTED_CODE
    )


# Every code object compiled from converted source, nested ones included (they stay alive in the
# converter's cache anyway).
_CONVERTED_CODE: set[types.CodeType] = set()


def remember_converted_code(code: types.CodeType) -> None:
    """Record ``code`` and the code nested in it as made by dy2st, not compiled from the file."""
    _CONVERTED_CODE.add(code)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            remember_converted_code(constant)


def _enclosing_scopes(qualname: str) -> list[tuple[str, bool]]:
    """(name, is a function) for each scope around a definition, outermost first.

    ``f.<locals>.Net.forward``: ``f`` is a function (it has locals), ``Net`` a class. A
    comprehension's scope (``<listcomp>``) is a function without the ``<locals>`` marker.
    """
    parts = qualname.split(".")[:-1]
    return [
        (part, part.startswith("<") or parts[i + 1 : i + 2] == ["<locals>"])
        for i, part in enumerate(parts)
        if part != "<locals>"
    ]


def mangling_class(code: types.CodeType) -> str | None:
    """The class whose name Python mangled private names of ``code`` with (``self.__w`` compiles
    to ``self._Net__w`` in ``class Net``), or None when it has no such name."""
    classes = [name for name, is_function in _enclosing_scopes(code.co_qualname) if not is_function]
    if not classes or not classes[-1].lstrip("_"):
        return None
    prefix = f"_{classes[-1].lstrip('_')}__"
    return classes[-1] if any(name.startswith(prefix) for name in _identifiers(code)) else None


def _identifiers(code: types.CodeType) -> set[str]:
    """Every name ``code`` and the code nested in it use: globals, attributes, locals, cells."""
    names = {*code.co_names, *code.co_varnames, *code.co_cellvars, *code.co_freevars}
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= _identifiers(constant)
    return names


def _in_enclosing_scopes(node: Definition, code: types.CodeType) -> ast.Module:
    """A module defining ``node`` inside the scopes ``code`` was compiled in.

    The enclosing classes keep their names (private names are mangled with them, and a method
    using ``super()`` gets the ``__class__`` cell); the innermost enclosing function assigns the
    free variables, so they are read from a closure as in the original.
    """
    statement: ast.stmt = node if not isinstance(node, ast.Lambda) else _located(ast.Expr(node), node)
    body: list[ast.stmt] = [statement]
    scopes = _enclosing_scopes(code.co_qualname)
    free = [name for name in code.co_freevars if name != "__class__"]  # classes provide __class__
    if free and not any(is_function for _, is_function in scopes):
        scopes.append(("<closure>", True))
    innermost_function = max((i for i, (_, is_function) in enumerate(scopes) if is_function), default=-1)
    for i in reversed(range(len(scopes))):
        name, is_function = scopes[i]
        if is_function:
            if i == innermost_function and free:
                targets: list[ast.expr] = [_located(ast.Name(v, ast.Store()), node) for v in free]
                body.insert(0, _located(ast.Assign(targets, _located(ast.Constant(None), node)), node))
            body = [_located(function_def(name, ast.arguments([], [], None, [], [], None, []), body), node)]
        else:
            body = [_located(ast.ClassDef(name, [], [], body, []), node)]
    return ast.Module(body, [])


def function_def(name: str, args: ast.arguments, body: list[ast.stmt]) -> ast.FunctionDef:
    """``def name(args): body``, without decorators or annotations."""
    fields: dict[str, Any] = {"name": name, "args": args, "body": body}
    fields.update(decorator_list=[], returns=None, type_comment=None)
    if "type_params" in ast.FunctionDef._fields:  # Python 3.12+
        fields["type_params"] = []
    return ast.FunctionDef(**fields)


def _located(new: Any, node: ast.AST) -> Any:
    return ast.copy_location(new, node)


def _find_code(code: types.CodeType, qualname: str, firstlineno: int) -> types.CodeType | None:
    """The code object named ``qualname`` starting at ``firstlineno`` inside ``code``."""
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            if constant.co_qualname == qualname and constant.co_firstlineno == firstlineno:
                return constant
            found = _find_code(constant, qualname, firstlineno)
            if found is not None:
                return found
    return None
