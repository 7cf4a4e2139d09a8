"""Lower ``break`` and ``continue`` into flag variables and structured ``if``/``while``/``for``.

Before::

    while i < n:
        if x[i] < 0:
            break
        if x[i] == 0:
            i += 1
            continue
        s += x[i]
        i += 1
    else:
        s = -s

After::

    break_ = False
    while not break_ and i < n:
        continue_ = False
        if x[i] < 0:
            break_ = True
        else:
            if x[i] == 0:
                i += 1
                continue_ = True
            if not continue_:
                s += x[i]
                i += 1
    if not break_:
        s = -s

``continue`` sets a flag that guards the rest of the body; ``break`` sets a flag that guards the
rest of the body and is and-ed into the loop condition. An ``if`` whose branch always leaves takes
the statements after it into its other branch instead of a guard, and a flag nothing reads is
dropped. A loop's ``else`` runs after the loop unless it was left by ``break``.

A ``for`` loop with ``break`` cannot and its iterable with a condition, so the iterable is wrapped::

    break_ = False
    for x in _dy2st.iterate_until(items, lambda: break_):
        if not break_:
            ...

``iterate_until`` checks the flag before each next element, so a Python loop stops right after the
``break`` (infinite iterators included). The control-flow runtime recognises the wrapper
(``dy2st.runtime.control_flow.iterables.StoppableIterable``) and ands ``not break_`` into the condition of a
tensor loop. Where the flag is a tensor that Python cannot test (a Python loop left by a ``break``
under a tensor ``if``), the remaining iterations run under the guard and change nothing, and a loop
variable used after the loop (``hold_at_break=True``) keeps the element of the ``break``.
"""

from __future__ import annotations

from dataclasses import dataclass

import gast

from dy2st.frontend.analysis import anno, annotate
from dy2st.frontend.transformer import Context, Transformer, copy_location_deep, runtime_attr
from dy2st.frontend.transformers.logical import make_lambda

_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef, gast.Lambda)
_LOOPS = (gast.While, gast.For, gast.AsyncFor)


def _name(id_: str, ctx: type = gast.Load) -> gast.Name:
    return gast.Name(id=id_, ctx=ctx(), annotation=None, type_comment=None)


def _set(flag: str, value: bool) -> gast.Assign:
    return gast.Assign(
        targets=[_name(flag, gast.Store)], value=gast.Constant(value=value, kind=None), type_comment=None
    )


def _located(new: gast.stmt, origin: gast.AST) -> gast.stmt:
    """``new`` with ``origin``'s location, so errors in generated code name the user's line."""
    copy_location_deep(new, origin)
    return new


def _exits_in(stmts: list[gast.stmt]) -> set[type]:
    """The kinds of exit (``gast.Break``, ``gast.Continue``) in ``stmts`` that leave this loop.

    Exits inside nested loop bodies and nested scopes belong to them; those in a nested loop's
    ``else`` belong to this loop.
    """
    found: set[type] = set()
    stack = list(stmts)
    while stack:
        node = stack.pop()
        if isinstance(node, (gast.Break, gast.Continue)):
            found.add(type(node))
        elif isinstance(node, _LOOPS):
            stack.extend(node.orelse)
        elif not isinstance(node, _SCOPES):
            stack.extend(gast.iter_child_nodes(node))
    return found


def _always_exits(stmts: list[gast.stmt]) -> bool:
    """Does the block leave the iteration (break or continue) on every path?"""
    for stmt in stmts:
        if isinstance(stmt, (gast.Break, gast.Continue)):
            return True
        if isinstance(stmt, gast.If) and _always_exits(stmt.body) and _always_exits(stmt.orelse):
            return True
        if isinstance(stmt, (gast.With, gast.AsyncWith)) and _always_exits(stmt.body):
            return True
    return False


@dataclass
class _LoopFlags:
    """The flag variable of each kind of exit a loop has (None for a kind it does not have)."""

    break_flag: str | None
    continue_flag: str | None

    def flag_of(self, kind: type) -> str:
        flag = self.break_flag if kind is gast.Break else self.continue_flag
        assert flag is not None, "the flags were made from the exits the loop has"
        return flag

    def guard(self, kinds: set[type]) -> gast.expr:
        """``not flag`` (or ``not (a or b)``): true while none of the ``kinds`` of exit was taken."""
        names = [_name(self.flag_of(kind)) for kind in sorted(kinds, key=lambda k: k.__name__)]
        operand = names[0] if len(names) == 1 else gast.BoolOp(op=gast.Or(), values=names)
        return gast.UnaryOp(op=gast.Not(), operand=operand)


def _lower_block(stmts: list[gast.stmt], flags: _LoopFlags) -> list[gast.stmt]:
    """Replace this loop's exits in a block by flag assignments and guard what follows them."""
    out: list[gast.stmt] = []
    for index, stmt in enumerate(stmts):
        rest = stmts[index + 1 :]
        if isinstance(stmt, (gast.Break, gast.Continue)):
            out.append(_located(_set(flags.flag_of(type(stmt)), True), stmt))
            return out  # the rest of the block is unreachable
        exits = _exits_in([stmt])
        if not exits:
            out.append(stmt)
            continue
        out.append(stmt)
        if isinstance(stmt, gast.If) and _collapse_if(stmt, rest, flags):
            return out
        always_exits = _always_exits([stmt])  # judged before the exits become assignments
        _lower_nested_blocks(stmt, flags)
        if always_exits:
            return out
        if rest:
            out.append(_located(gast.If(test=flags.guard(exits), body=_lower_block(rest, flags), orelse=[]), rest[0]))
            return out
    return out


def _collapse_if(node: gast.If, rest: list[gast.stmt], flags: _LoopFlags) -> bool:
    """Lower ``node``; if exactly one branch always exits, move ``rest`` into the other one."""
    body_exits, orelse_exits = _always_exits(node.body), _always_exits(node.orelse)
    if body_exits == orelse_exits:
        return False
    if body_exits:
        node.orelse = node.orelse + rest
    else:
        node.body = node.body + rest
    node.body = _lower_block(node.body, flags)
    node.orelse = _lower_block(node.orelse, flags)
    return True


def _lower_nested_blocks(node: gast.stmt, flags: _LoopFlags) -> None:
    if isinstance(node, _LOOPS):  # only the else clause can hold this loop's exits
        node.orelse = _lower_block(node.orelse, flags)
        return
    for field in ("body", "orelse", "finalbody"):
        block = getattr(node, field, None)
        if isinstance(block, list):
            setattr(node, field, _lower_block(block, flags))
    for handler in getattr(node, "handlers", ()):
        handler.body = _lower_block(handler.body, flags)


def _reads(stmts: list[gast.stmt], name: str) -> bool:
    return any(
        isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Load)
        for stmt in stmts
        for n in gast.walk(stmt)
    )


def _drop_assignments(stmts: list[gast.stmt], flag: str) -> list[gast.stmt]:
    """``stmts`` without the assignments of an unread ``flag`` (empty bodies become ``pass``)."""
    kept = []
    for stmt in stmts:
        if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name) and stmt.targets[0].id == flag:
            continue
        if not isinstance(stmt, _SCOPES):
            for field in ("body", "orelse", "finalbody"):
                block = getattr(stmt, field, None)
                if isinstance(block, list) and block:
                    setattr(stmt, field, _drop_assignments(block, flag) or [_located(gast.Pass(), stmt)])
            for handler in getattr(stmt, "handlers", ()):
                handler.body = _drop_assignments(handler.body, flag) or [_located(gast.Pass(), handler)]
        kept.append(stmt)
    return kept


class BreakContinueTransformer(Transformer):
    """Lowers the ``break``/``continue`` of every loop, innermost loops first."""

    def _flags(self, body: list[gast.stmt]) -> _LoopFlags:
        exits = _exits_in(body)
        return _LoopFlags(
            self.ctx.namer.new("break_") if gast.Break in exits else None,
            self.ctx.namer.new("continue_") if gast.Continue in exits else None,
        )

    def _lower_body(self, node: gast.While | gast.For, flags: _LoopFlags) -> list[gast.stmt]:
        body = _lower_block(node.body, flags)
        if flags.continue_flag is not None:
            if _reads(body, flags.continue_flag):
                body.insert(0, _located(_set(flags.continue_flag, False), node))
            else:
                body = _drop_assignments(body, flags.continue_flag) or [_located(gast.Pass(), node)]
        return body

    def _with_else(self, node: gast.While | gast.For, flags: _LoopFlags) -> list[gast.stmt]:
        """The loop, preceded by its break flag and followed by its ``else`` clause."""
        before = [] if flags.break_flag is None else [_located(_set(flags.break_flag, False), node)]
        after = node.orelse
        node.orelse = []
        if after and flags.break_flag is not None:
            guard = gast.If(test=gast.UnaryOp(op=gast.Not(), operand=_name(flags.break_flag)), body=after, orelse=[])
            after = [_located(guard, after[0])]
        return before + [node] + after

    def visit_While(self, node: gast.While):
        self.generic_visit(node)
        flags = self._flags(node.body)
        if flags.break_flag is None and flags.continue_flag is None and not node.orelse:
            return node
        node.body = self._lower_body(node, flags)
        if flags.break_flag is not None:
            not_broken = gast.UnaryOp(op=gast.Not(), operand=_name(flags.break_flag))
            node.test = gast.BoolOp(op=gast.And(), values=[not_broken, node.test])
        copy_location_deep(node.test, node)
        return self._with_else(node, flags)

    def visit_For(self, node: gast.For):
        self.generic_visit(node)
        flags = self._flags(node.body)
        if flags.break_flag is None and flags.continue_flag is None and not node.orelse:
            return node
        node.body = self._lower_body(node, flags)
        if flags.break_flag is not None:
            self._stop_for_at_break(node, flags.break_flag)
        return self._with_else(node, flags)

    def _stop_for_at_break(self, node: gast.For, break_flag: str) -> None:
        guard = gast.If(test=gast.UnaryOp(op=gast.Not(), operand=_name(break_flag)), body=node.body, orelse=[])
        node.body = [_located(guard, node)]
        keywords = []
        target_names = {n.id for n in gast.walk(node.target) if isinstance(n, gast.Name)}
        if target_names & anno.get(node, anno.LIVE_OUT, target_names):
            # Used after the loop: the target must keep the element at the break even when the
            # flag is a tensor and Python cannot stop iterating.
            keywords.append(gast.keyword(arg="hold_at_break", value=gast.Constant(value=True, kind=None)))
        node.iter = gast.Call(
            func=runtime_attr("iterate_until"), args=[node.iter, make_lambda(_name(break_flag))], keywords=keywords
        )
        copy_location_deep(node.iter, node)


def transform(tree: gast.AST, ctx: Context) -> gast.AST:
    """Lower ``break`` and ``continue`` in every loop of ``tree``."""
    annotate(tree)  # which for-loop variables are used after their loop
    return BreakContinueTransformer(ctx).visit(tree)
