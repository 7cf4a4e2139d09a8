"""What the ``if`` and loop converters share: the one-time analysis, the generated nested
functions (branches, loop bodies, ``get_state``/``set_state``), the checks for constructs a staged
block cannot express, and the scope tracking that decides which variables they may rebind."""

from __future__ import annotations

from dataclasses import dataclass, field

import gast

from dy2st.frontend.analysis import annotate
from dy2st.frontend.analysis.scopes import block_usage, node_usage, nonlocal_names, parameter_names
from dy2st.frontend.templates import literal, place_at, template, template_expr
from dy2st.frontend.transformer import Context, Transformer, walk

_ANALYSED = "control_flow_analysed"
_STATE_ARG = "control_flow_state_arg"
_NESTED_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)
_LOOPS = (gast.While, gast.For, gast.AsyncFor)


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


def nonlocal_function(name: str, param: str, names: tuple[str, ...], body: list[gast.stmt]) -> gast.FunctionDef:
    """``def name(param): nonlocal names; body`` (the user's statements keep their locations)."""
    header = "def name(param):\n" if param else "def name():\n"
    declaration = "    nonlocal names\n" if names else ""
    (func,) = template(header + declaration + "    pass", name=name, param=param, names=names)
    func.body = func.body[:-1] + (body or template("pass"))
    return func


def state_functions(get_name: str, set_name: str, names: tuple[str, ...], ctx: Context) -> list[gast.stmt]:
    """``get_state`` returning the tuple of ``names`` and ``set_state`` rebinding them."""
    setter = "    nonlocal names\n    names = state\n" if names else "    pass\n"
    return template(
        "def get_state():\n    return names\n\ndef set_state(state):\n" + setter,
        get_state=get_name,
        set_state=set_name,
        names=names,
        state=state_arg(ctx),
    )


def undefined_inits(names: tuple[str, ...]) -> list[gast.stmt]:
    """``y = _dy2st.Undefined('y')`` for each of ``names``."""
    return [stmt for n in names for stmt in template("name = _dy2st.Undefined(label)", name=n, label=literal(n))]


def runtime_wrap(helper: str, value: gast.expr, construct: str) -> gast.expr:
    """``_dy2st.<helper>(value, construct)``, at ``value``'s location."""
    call = template_expr("_dy2st.helper(value, construct)", helper=helper, value=value, construct=literal(construct))
    place_at([call], value)
    return call


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
        return "a 'break' statement" if isinstance(node, gast.Break) else "a 'continue' statement"
    if isinstance(node, gast.With) and all(_is_errstate(item.context_expr) for item in node.items):
        return None  # staged: the ops inside run under the settings (runtime/errstate.py)
    names = {
        gast.Try: "a 'try' statement",
        gast.With: "a 'with' statement",
        gast.Raise: "a 'raise' statement",
        gast.Delete: "a 'del' statement",
        gast.Global: "a 'global' declaration",
        gast.Nonlocal: "a 'nonlocal' declaration",
    }
    return names.get(type(node))


def _is_errstate(expr: gast.expr) -> bool:
    """``np.errstate(...)`` (or ``numpy.errstate``, ``errstate``): a with-item dy2st stages."""
    if not isinstance(expr, gast.Call):
        return False
    func = expr.func
    name = func.attr if isinstance(func, gast.Attribute) else func.id if isinstance(func, gast.Name) else None
    return name == "errstate"


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
