"""Convert ``if``/``elif``/``else`` into branch functions and a ``convert_ifelse`` call.

Before::

    if x > 0:
        y = x * 2
    else:
        y = -x

After::

    def true_fn():
        nonlocal y
        y = x * 2

    def false_fn():
        nonlocal y
        y = -x

    def get_state():
        return y,

    def set_state(vars_):
        nonlocal y
        y, = vars_
    _dy2st.convert_ifelse(x > 0, true_fn, false_fn, get_state, set_state, ('y',), ('y',))

The state is every variable either branch assigns (found by static analysis); the last tuple names
the branch outputs, those used after the ``if``. A variable the function does not surely bind
before is bound to ``_dy2st.Undefined('y')`` at the top of the function, so ``nonlocal`` has a
binding and a use of a variable defined on one path only is reported by name. ``elif`` is a
nested ``if`` in the ``else`` branch, converted first (the transformer works bottom-up).

An ``if`` whose branches contain something a graph op cannot express (``return``, ``break``,
``continue`` not lowered by the early-exit converters, ``try``, ``with``, ``raise``, ``del``) stays
a Python ``if`` with its condition wrapped in ``_dy2st.python_bool(test, what)``, which raises a
clear ``UnsupportedSyntaxError`` if the condition turns out to be a tensor.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import gast

from dy2st.frontend.analysis import anno, annotate
from dy2st.frontend.analysis.scopes import block_usage, node_usage, nonlocal_names, parameter_names
from dy2st.frontend.transformer import Context, Transformer, parse_expr, parse_stmts, walk

_ANALYSED = "control_flow_analysed"
_STATE_ARG = "control_flow_state_arg"
_NESTED_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)
_LOOPS = (gast.While, gast.For, gast.AsyncFor)


# --- shared with the loop converter ---------------------------------------------------------------
def ensure_analysed(tree: gast.AST, ctx: Context) -> None:
    """Run the static analysis once per conversion, on the code before any control-flow rewrite.

    Later converters read the annotations it left: recomputing them on already converted code
    would see the generated ``nonlocal`` functions, not the user's data flow.
    """
    if not ctx.notes.get(_ANALYSED):
        annotate(tree)
        ctx.notes[_ANALYSED] = True


def state_arg(ctx: Context) -> str:
    """The parameter name of every generated ``set_state`` (fresh, so it shadows nothing)."""
    if _STATE_ARG not in ctx.notes:
        ctx.notes[_STATE_ARG] = ctx.namer.new("vars_")
    return ctx.notes[_STATE_ARG]


def strip_locations(nodes: list[gast.AST]) -> list[gast.AST]:
    """Forget template line numbers, so the converted statement's location is copied instead."""
    for root in nodes:
        for node in walk(root):
            if "lineno" in node._attributes:
                node.lineno = node.end_lineno = None
                node.col_offset = node.end_col_offset = None
    return nodes


def place_at(nodes: list[gast.AST], stmt: gast.stmt) -> list[gast.AST]:
    """Give generated nodes (those without a location) the first line and column of ``stmt``.

    Each spans no further than that line: CPython reports a call ``_dy2st.f(...)`` at the end of
    its ``_dy2st.f`` attribute, which therefore ends ``len('f')`` columns after ``stmt`` starts,
    so errors point at the ``if``/``while``/``for`` keyword itself.
    """
    for root in nodes:
        for node in walk(root):
            if "lineno" in node._attributes and getattr(node, "lineno", None) is None:
                node.lineno = node.end_lineno = stmt.lineno
                node.col_offset = stmt.col_offset
                node.end_col_offset = stmt.col_offset + (len(node.attr) if isinstance(node, gast.Attribute) else 0)
    return nodes


def template(source: str) -> list[gast.stmt]:
    return strip_locations(parse_stmts(source))


def _tuple_source(names: tuple[str, ...]) -> str:
    return "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"


def nonlocal_function(name: str, params: str, names: tuple[str, ...], body: list[gast.stmt]) -> gast.FunctionDef:
    """``def name(params): nonlocal names; body`` (the user's statements keep their locations)."""
    declaration = f"\n    nonlocal {', '.join(names)}" if names else ""
    func = template(f"def {name}({params}):{declaration}\n    pass")[0]
    func.body = func.body[:-1] + (body or template("pass"))
    return func


def state_functions(get_name: str, set_name: str, names: tuple[str, ...], ctx: Context) -> list[gast.stmt]:
    """``get_state`` returning the tuple of ``names`` and ``set_state`` rebinding them."""
    arg = state_arg(ctx)
    values = _tuple_source(names)
    setter = f"    nonlocal {', '.join(names)}\n    {values} = {arg}" if names else "    pass"
    return template(f"def {get_name}():\n    return {values}\n\ndef {set_name}({arg}):\n{setter}\n")


def undefined_inits(names: tuple[str, ...]) -> list[gast.stmt]:
    """``y = _dy2st.Undefined('y')`` for each of ``names``."""
    return template("".join(f"{n} = _dy2st.Undefined({n!r})\n" for n in names))


def runtime_call(source: str, first_arg: gast.expr | None = None) -> gast.Expr:
    """``_dy2st.<helper>(...)`` as a statement; ``first_arg`` replaces a ``None`` first argument."""
    call = parse_expr(source)
    strip_locations([call])
    if first_arg is not None:
        call.args[0] = first_arg
    return gast.Expr(value=call)


def blocker(stmts: list[gast.stmt], ctx: Context) -> str | None:
    """The first construct in ``stmts`` that a staged branch or loop body cannot express, if any.

    ``break``/``continue`` only block the statement they belong to: those of loops nested in
    ``stmts`` are fine, and for an ``if`` they block (the loop they leave is outside it).
    """
    stack: list[tuple[gast.AST, bool]] = [(s, False) for s in reversed(stmts)]
    while stack:
        node, in_inner_loop = stack.pop()
        what = _blocking_construct(node, in_inner_loop)
        if what is not None:
            return f"{what} (line {ctx.info.location(node).lineno})"
        if isinstance(node, _NESTED_SCOPES):
            continue
        inner = in_inner_loop or isinstance(node, _LOOPS)
        stack.extend((child, inner) for child in reversed(list(gast.iter_child_nodes(node))))
    return None


def _blocking_construct(node: gast.AST, in_inner_loop: bool) -> str | None:
    if isinstance(node, gast.Return):
        return "a 'return' statement"
    if isinstance(node, (gast.Break, gast.Continue)) and not in_inner_loop:
        return f"a '{type(node).__name__.lower()}' statement"
    names = {gast.Try: "a 'try' statement", gast.With: "a 'with' statement", gast.Raise: "a 'raise' statement",
             gast.Delete: "a 'del' statement", gast.Global: "a 'global' declaration",
             gast.Nonlocal: "a 'nonlocal' declaration"}
    return names.get(type(node))


@dataclass
class _Scope:
    """A user function being converted: its own variables, and those converted code must bind."""

    own: frozenset[str]  # bound in it and not declared nonlocal
    visible: frozenset[str]  # its own variables, parameters, and nonlocal-declared names
    params: frozenset[str]
    needs_binding: dict[str, None] = field(default_factory=dict)


class ScopedTransformer(Transformer):
    """Tracks the enclosing functions' variables; ``nonlocal`` may only name those.

    Converted code reads and rebinds a function's variables from generated nested functions, so
    each such variable needs a binding in the function itself before the first generated code
    touches it. Where the function does not surely bind it first, ``y = _dy2st.Undefined('y')``
    is inserted at its top: exactly Python's "unbound" state, but a binding ``nonlocal`` accepts.
    """

    def __init__(self, ctx: Context):
        super().__init__(ctx)
        self.scopes: list[_Scope] = []

    def visit_FunctionDef(self, node: gast.FunctionDef) -> gast.FunctionDef:
        params = frozenset(parameter_names(node))
        declared = frozenset(nonlocal_names(node))
        own = (params | frozenset(block_usage(node.body).kills)) - declared
        scope = _Scope(own, own | declared, params)
        self.scopes.append(scope)
        self.generic_visit(node)
        self.scopes.pop()
        needed = tuple(n for n in scope.needs_binding if n not in params)
        bound = _bound_before_use(node.body, needed)
        unbound = tuple(n for n in needed if n not in bound)
        if unbound:
            first = 1 if _has_docstring(node) else 0
            node.body[first:first] = place_at(undefined_inits(unbound), node.body[min(first, len(node.body) - 1)])
        return node

    def visit_ClassDef(self, node: gast.ClassDef) -> gast.ClassDef:
        return node  # a class body is its own namespace, which nonlocal cannot reach: it stays Python

    def state_names(self, names: tuple[str, ...]) -> tuple[str, ...]:
        """Of ``names``, those converted code can rebind, each marked as needing a binding.

        The others are globals or free variables of the converted function: their objects may
        be updated (``W[0] = 1``, seen by the runtime as in-place updates), never rebound.
        """
        visible = frozenset().union(*(s.visible for s in self.scopes))
        kept = tuple(n for n in names if n in visible)
        for name in kept:
            owner = next((s for s in reversed(self.scopes) if name in s.own), None)
            if owner is not None:
                owner.needs_binding.setdefault(name, None)
        return kept


def _has_docstring(node: gast.FunctionDef) -> bool:
    first = node.body[0] if node.body else None
    return (
        isinstance(first, gast.Expr) and isinstance(first.value, gast.Constant) and isinstance(first.value.value, str)
    )


_BINDING_STATEMENTS = (gast.Assign, gast.AnnAssign, gast.Import, gast.ImportFrom, gast.FunctionDef, gast.ClassDef)


def _bound_before_use(body: list[gast.stmt], names: tuple[str, ...]) -> set[str]:
    """Of ``names``, those a top-level statement surely binds before generated code declares them
    nonlocal (reads or rebinds them from a nested function)."""
    pending, bound = set(names), set()
    for stmt in body:
        if not pending:
            break
        declared = {n for node in walk(stmt) if isinstance(node, gast.Nonlocal) for n in node.names}
        pending -= declared
        if isinstance(stmt, _BINDING_STATEMENTS):
            newly = pending & set(node_usage(stmt).kills)
            bound |= newly
            pending -= newly
    return bound


# --- the if/else converter ------------------------------------------------------------------------------
class IfElseTransformer(ScopedTransformer):
    def visit_If(self, node: gast.If):
        self.generic_visit(node)  # inner ifs (and elif chains) first
        if not anno.has(node, anno.LIVE_OUT):
            return node  # generated by an earlier converter after the analysis ran
        blocked = blocker(node.body + node.orelse, self.ctx)
        if blocked is not None:
            node.test = runtime_wrap("python_bool", node.test, blocked)
            return node
        return self._convert(node)

    def _convert(self, node: gast.If) -> list[gast.stmt]:
        names = self.state_names(anno.get(node, anno.MODIFIED))
        live = anno.get(node, anno.LIVE_OUT)
        outputs = tuple(n for n in names if n in live)
        namer = self.ctx.namer
        true_name, false_name = namer.new("true_fn"), namer.new("false_fn")
        get_name, set_name = namer.new("get_state"), namer.new("set_state")
        call = runtime_call(
            f"_dy2st.convert_ifelse(None, {true_name}, {false_name}, {get_name}, {set_name}, {names!r}, {outputs!r})",
            node.test,
        )
        statements = [
            nonlocal_function(true_name, "", names, node.body),
            nonlocal_function(false_name, "", names, node.orelse),
            *state_functions(get_name, set_name, names, self.ctx),
            call,
        ]
        return place_at(statements, node)


def runtime_wrap(helper: str, value: gast.expr, construct: str) -> gast.expr:
    """``_dy2st.<helper>(value, construct)``, at ``value``'s location."""
    call = parse_expr(f"_dy2st.{helper}(None, {construct!r})")
    strip_locations([call])
    call.args[0] = value
    place_at([call], value)
    return call


def transform(tree: gast.AST, ctx: Context) -> gast.AST:
    """Convert every ``if`` of the function (see the module docstring)."""
    ensure_analysed(tree, ctx)
    return IfElseTransformer(ctx).visit(tree)
