"""Liveness over structured Python code, annotated on if/while/for nodes.

``annotate(tree)`` runs, for each function in the tree (nested ones included, each in its own
scope), an exact pass over the structured AST:

  * backward liveness: a name is live at a point if some path from there reads it before
    rebinding it. ``break`` continues with what is live after the loop, ``continue`` with what is
    live at the loop head, ``return`` with nothing. Loop heads are solved by iterating to a fixed
    point. Sets stored: ``LIVE_OUT`` on if/while/for, ``LIVE_HEAD`` on while/for. A ``for`` over
    ``range`` with non-empty literal bounds surely runs its first iteration, so what that iteration
    rebinds (its target first) is not live before the loop.

Plus ``MODIFIED``: the names written in an if's branches or a loop's body (and a for's target).

From these the converters derive, without guessing:
  * the outputs of an if: ``MODIFIED & LIVE_OUT`` (live after it, which inside a loop includes what
    the next iteration reads);
  * the carried variables of a loop: ``MODIFIED & LIVE_HEAD`` (read before written in the body or
    test, or live after the loop).
"""

from __future__ import annotations

from dataclasses import dataclass

import gast

from dy2st.frontend.analysis import anno
from dy2st.frontend.analysis.scopes import block_usage, node_usage, nonlocal_names
from dy2st.frontend.naming import RUNTIME_ALIAS

_FUNCTIONS = (gast.FunctionDef, gast.AsyncFunctionDef)
_OTHER_COMPOUND = tuple(getattr(gast, name) for name in ("Match", "TryStar") if hasattr(gast, name))


@dataclass(frozen=True)
class _LoopExits:
    """What is live where ``break`` and ``continue`` jump to."""

    after_loop: frozenset[str]
    loop_head: frozenset[str]


def annotate(tree: gast.AST) -> None:
    """Annotate every if/while/for of every function in ``tree`` (see the module docstring)."""
    for node in gast.walk(tree):
        if isinstance(node, _FUNCTIONS):
            _annotate_function(node)


def _annotate_function(func: gast.FunctionDef) -> None:
    # A function's nonlocal names are read by its enclosing function after it returns.
    _live_before(func.body, frozenset(nonlocal_names(func)), None)


# --- liveness (backward) ----------------------------------------------------------------------
def _live_before(stmts: list[gast.stmt], live: frozenset[str], exits: _LoopExits | None) -> frozenset[str]:
    for stmt in reversed(stmts):
        live = _live_before_stmt(stmt, live, exits)
    return live


def _live_before_stmt(stmt: gast.stmt, live: frozenset[str], exits: _LoopExits | None) -> frozenset[str]:
    if isinstance(stmt, gast.If):
        anno.set(stmt, anno.LIVE_OUT, live)
        anno.set(stmt, anno.MODIFIED, _modified(stmt.body + stmt.orelse))
        branches = _live_before(stmt.body, live, exits) | _live_before(stmt.orelse, live, exits)
        return branches | _reads(stmt.test)
    if isinstance(stmt, gast.While):
        return _live_before_while(stmt, live)
    if isinstance(stmt, (gast.For, gast.AsyncFor)):
        return _live_before_for(stmt, live)
    if isinstance(stmt, (gast.Break, gast.Continue, gast.Return, gast.Raise)):
        return _live_before_jump(stmt, live, exits)
    if isinstance(stmt, gast.Try):
        return _live_before_try(stmt, live, exits)
    if isinstance(stmt, (gast.With, gast.AsyncWith)):
        items = frozenset().union(*(_reads(item) for item in stmt.items))
        return items | _live_before(stmt.body, live, exits)
    usage = node_usage(stmt)
    if isinstance(stmt, _OTHER_COMPOUND):
        # Its assignments happen on some paths only: nothing is surely rebound.
        return live | frozenset(usage.reads)
    return (live - frozenset(usage.kills)) | frozenset(usage.reads)


def _live_before_jump(stmt: gast.stmt, live: frozenset[str], exits: _LoopExits | None) -> frozenset[str]:
    """``break``/``continue`` go to the loop's exit or head; ``return``/``raise`` leave with what
    they read."""
    if isinstance(stmt, gast.Break):
        return exits.after_loop if exits else live
    if isinstance(stmt, gast.Continue):
        return exits.loop_head if exits else live
    if isinstance(stmt, gast.Return):
        return _reads(stmt.value)
    return _reads(stmt.exc) | _reads(stmt.cause)


def _live_before_while(stmt: gast.While, live: frozenset[str]) -> frozenset[str]:
    anno.set(stmt, anno.MODIFIED, _modified(stmt.body))
    anno.set(stmt, anno.LIVE_OUT, live)
    after_else = _live_before(stmt.orelse, live, None)
    head: frozenset[str] = frozenset()
    while True:  # monotone in ``head``: terminates
        body = _live_before(stmt.body, head, _LoopExits(live, head))
        new_head = _reads(stmt.test) | body | after_else
        if new_head == head:
            break
        head = new_head
    anno.set(stmt, anno.LIVE_HEAD, head)
    return head


def _live_before_for(stmt: gast.For, live: frozenset[str]) -> frozenset[str]:
    target = node_usage(stmt.target)
    anno.set(stmt, anno.MODIFIED, _merge(list(target.writes), _modified(stmt.body)))
    anno.set(stmt, anno.LIVE_OUT, live)
    after_else = _live_before(stmt.orelse, live, None)
    head: frozenset[str] = frozenset()
    while True:
        body = _live_before(stmt.body, head, _LoopExits(live, head))
        next_item = (body - frozenset(target.kills)) | frozenset(target.reads)
        new_head = next_item | after_else
        if new_head == head:
            break
        head = new_head
    anno.set(stmt, anno.LIVE_HEAD, head)
    if runs_at_least_once(stmt):
        # The first iteration surely starts: what it rebinds (the target first) is not live before.
        first_item = _live_before(stmt.body, head, _LoopExits(live, head))
        return (first_item - frozenset(target.kills)) | frozenset(target.reads) | _reads(stmt.iter)
    return head | _reads(stmt.iter)


def runs_at_least_once(stmt: gast.For | gast.AsyncFor) -> bool:
    """Is the loop over ``range(...)`` with integer literal bounds that make it non-empty?

    Only literals count (``range(3)``, ``range(1, -2, -1)``): a name could be rebound to anything.
    """
    call = _unwrap_break(stmt.iter)
    if isinstance(stmt, gast.AsyncFor) or not isinstance(call, gast.Call) or call.keywords:
        return False
    if not (isinstance(call.func, gast.Name) and call.func.id == "range" and 1 <= len(call.args) <= 3):
        return False
    bounds = [_int_literal(arg) for arg in call.args]
    if any(b is None for b in bounds) or (len(bounds) == 3 and bounds[2] == 0):
        return False
    return len(range(*(int(b) for b in bounds if b is not None))) > 0


def _unwrap_break(iterable: gast.expr) -> gast.expr:
    """The iterable of a loop whose ``break`` was lowered to ``_dy2st.iterate_until(it, stop)``
    (a ``break`` cannot stop the loop before its first iteration starts)."""
    func = getattr(iterable, "func", None)
    if (
        isinstance(func, gast.Attribute)
        and func.attr == "iterate_until"
        and isinstance(func.value, gast.Name)
        and func.value.id == RUNTIME_ALIAS
        and iterable.args
    ):
        return iterable.args[0]
    return iterable


def _int_literal(node: gast.expr) -> int | None:
    """The value of an integer literal (``3``, ``-3``), else None."""
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        inner = _int_literal(node.operand)
        return -inner if inner is not None else None
    if isinstance(node, gast.Constant) and type(node.value) is int:
        return node.value
    return None


def _live_before_try(stmt: gast.Try, live: frozenset[str], exits: _LoopExits | None) -> frozenset[str]:
    # Conservative: an exception may leave the body at any point, so everything any handler
    # reads is live throughout the body.
    after_finally = _live_before(stmt.finalbody, live, exits)
    handlers = frozenset().union(*(_live_before(h.body, after_finally, exits) | _reads(h.type) for h in stmt.handlers))
    after_body = _live_before(stmt.orelse, after_finally, exits) | handlers
    return _live_before(stmt.body, after_body, exits) | handlers | after_finally


# --- helpers --------------------------------------------------------------------------------------
def _reads(node: gast.AST | None) -> frozenset[str]:
    return frozenset(node_usage(node).reads)


def _modified(stmts: list[gast.stmt]) -> tuple[str, ...]:
    return tuple(block_usage(stmts).writes)


def _merge(first: list[str], second: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(list(first) + list(second)))
