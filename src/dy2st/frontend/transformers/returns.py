"""Lower ``return`` statements anywhere in a function into one exit at its end.

Before::

    def f(x):
        if x > 0:
            return x
        while x < 10:
            if x == 5:
                return -x
            x = x + 2
        return x * 2

After::

    def f(x):
        do_return = False
        if x > 0:
            do_return = True
            retval = x
        else:
            while x < 10:
                if x == 5:
                    do_return = True
                    retval = -x
                    break
                x = x + 2
            if not do_return:
                do_return = True
                retval = x * 2
        return retval

An ``if`` whose branch always returns takes the statements that follow it into its other branch,
so the common "early return" needs no flag and every path assigns ``retval`` (a tensor ``cond``
needs the returned value on both paths). Otherwise the statements after one that may return run
under ``if not do_return``. Inside a loop a ``return`` also ``break``s, and after an inner loop
that may return the outer loop breaks too, so loop exits are left to the break converter, which
runs next. ``retval`` starts as ``None`` only when the function can end without a ``return``.
Nested functions get their own flags.
"""

from __future__ import annotations

import gast

from dy2st.frontend.reserved_names import RETURN_VALUE_STEM
from dy2st.frontend.transformer import Context, Transformer, copy_location_deep, runtime_attr

_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef, gast.Lambda)
_LOOPS = (gast.While, gast.For, gast.AsyncFor)


def _walk_scope(nodes: list[gast.AST]):
    """Every node under ``nodes`` that belongs to the same function (not to nested scopes)."""
    stack = list(nodes)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _SCOPES):
            continue
        stack.extend(gast.iter_child_nodes(node))


def _may_return(stmts: list[gast.stmt]) -> bool:
    return any(isinstance(n, gast.Return) for n in _walk_scope(stmts))


def _always_returns(stmts: list[gast.stmt]) -> bool:
    """Does the block return on every path (judged before lowering)?"""
    for stmt in stmts:
        if isinstance(stmt, gast.Return):
            return True
        if isinstance(stmt, gast.If) and _always_returns(stmt.body) and _always_returns(stmt.orelse):
            return True
        if isinstance(stmt, (gast.With, gast.AsyncWith)) and _always_returns(stmt.body):
            return True
    return False


def _needs_lowering(body: list[gast.stmt]) -> bool:
    """False when the only ``return`` (if any) is the function's last statement."""
    if not _may_return(body):
        return False
    return _may_return(body[:-1]) or not isinstance(body[-1], gast.Return)


def _name(id_: str, ctx: type = gast.Load) -> gast.Name:
    return gast.Name(id=id_, ctx=ctx(), annotation=None, type_comment=None)


def _assign(target: str, value: gast.expr) -> gast.Assign:
    return gast.Assign(targets=[_name(target, gast.Store)], value=value, type_comment=None)


def _not(name: str) -> gast.UnaryOp:
    return gast.UnaryOp(op=gast.Not(), operand=_name(name))


def _located(new: gast.stmt, origin: gast.AST) -> gast.stmt:
    """``new`` with ``origin``'s location, so errors in generated code name the user's line."""
    copy_location_deep(new, origin)
    return new


def _is_docstring(stmt: gast.stmt) -> bool:
    return isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Constant) and isinstance(stmt.value.value, str)


class _FunctionReturns:
    """Lowers the returns of one function body, given its flag and return-value names."""

    def __init__(self, do_return: str, retval: str):
        self.do_return = do_return
        self.retval = retval

    def lower(self, stmts: list[gast.stmt], in_loop: bool) -> tuple[list[gast.stmt], bool]:
        """The lowered block, and whether it returns on every path."""
        out: list[gast.stmt] = []
        for index, stmt in enumerate(stmts):
            rest = stmts[index + 1 :]
            if isinstance(stmt, gast.Return):
                out.extend(self._exit(stmt, in_loop))
                return out, True  # the rest of the block is unreachable
            if not _may_return([stmt]):
                out.append(stmt)
                continue
            if isinstance(stmt, gast.If):
                collapsed = self._collapse_if(stmt, rest, in_loop)
                if collapsed is not None:
                    out.append(stmt)
                    return out, collapsed
            definitely = self._lower_compound(stmt, in_loop)
            out.append(stmt)
            if isinstance(stmt, _LOOPS) and in_loop:
                # The inner loop's `break` left only the inner loop; leave this one too.
                out.append(_located(gast.If(test=_name(self.do_return), body=[gast.Break()], orelse=[]), stmt))
            if definitely:
                return out, True
            if rest and not in_loop:
                guarded, rest_definitely = self.lower(rest, in_loop)
                out.append(_located(gast.If(test=_not(self.do_return), body=guarded, orelse=[]), rest[0]))
                return out, rest_definitely
            # In a loop, the `break` that goes with each return makes the break converter guard
            # the rest of the body, so it is lowered as it stands.
        return out, False

    def _exit(self, node: gast.Return, in_loop: bool) -> list[gast.stmt]:
        value = node.value if node.value is not None else gast.Constant(value=None, kind=None)
        exit_stmts: list[gast.stmt] = [
            _assign(self.do_return, gast.Constant(value=True, kind=None)),
            # The value is read where the return is (an array a later update would change is
            # checked there): _dy2st.returned(value).
            _assign(self.retval, gast.Call(func=runtime_attr("returned"), args=[value], keywords=[])),
        ]
        if in_loop:
            exit_stmts.append(gast.Break())
        return [_located(new, node) for new in exit_stmts]

    def _collapse_if(self, node: gast.If, rest: list[gast.stmt], in_loop: bool) -> bool | None:
        """Lower ``node``, moving ``rest`` into the branch that does not always return.

        Returns whether the result always returns, or None when neither branch always returns
        (then ``node`` is lowered without ``rest``).
        """
        body_returns, orelse_returns = _always_returns(node.body), _always_returns(node.orelse)
        if body_returns and not orelse_returns:
            node.body, _ = self.lower(node.body, in_loop)
            node.orelse, definitely = self.lower(node.orelse + rest, in_loop)
            return definitely
        if orelse_returns and not body_returns:
            node.orelse, _ = self.lower(node.orelse, in_loop)
            node.body, definitely = self.lower(node.body + rest, in_loop)
            return definitely
        node.body, _ = self.lower(node.body, in_loop)
        node.orelse, _ = self.lower(node.orelse, in_loop)
        return True if body_returns and orelse_returns else None

    def _lower_compound(self, node: gast.stmt, in_loop: bool) -> bool:
        """Lower the blocks of a compound statement in place; does it return on every path?"""
        if isinstance(node, gast.If):  # neither branch always returns: already lowered
            return False
        if isinstance(node, _LOOPS):
            node.body, _ = self.lower(node.body, in_loop=True)
            node.orelse, _ = self.lower(node.orelse, in_loop)
            return False
        if isinstance(node, (gast.With, gast.AsyncWith)):
            node.body, definitely = self.lower(node.body, in_loop)
            return definitely
        if isinstance(node, gast.Try):
            node.body, _ = self.lower(node.body, in_loop)
            for handler in node.handlers:
                handler.body, _ = self.lower(handler.body, in_loop)
            node.orelse, _ = self.lower(node.orelse, in_loop)
            node.finalbody, _ = self.lower(node.finalbody, in_loop)
            return False
        return False


def _drop_unread_flag(body: list[gast.stmt], flag: str) -> None:
    """Remove the assignments of ``flag`` when nothing reads it (the collapsed ``if`` cases)."""
    if any(isinstance(n, gast.Name) and n.id == flag and isinstance(n.ctx, gast.Load) for n in _walk_scope(body)):
        return
    for node in [*body, *_walk_scope(body)]:
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and not isinstance(node, _SCOPES):
                kept = [s for s in block if not _assigns(s, flag)]
                setattr(node, field, kept or ([_located(gast.Pass(), node)] if field == "body" else []))
    body[:] = [s for s in body if not _assigns(s, flag)]


def _assigns(stmt: gast.stmt, name: str) -> bool:
    return (
        isinstance(stmt, gast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], gast.Name)
        and stmt.targets[0].id == name
    )


class ReturnTransformer(Transformer):
    """Gives every function with an early ``return`` a single ``return`` at its end."""

    def visit_FunctionDef(self, node: gast.FunctionDef) -> gast.FunctionDef:
        self.generic_visit(node)  # nested functions first; they keep their own returns
        if not _needs_lowering(node.body):
            return node
        do_return = self.ctx.namer.new("do_return")
        retval = self.ctx.namer.new(RETURN_VALUE_STEM)
        docstring = node.body[:1] if _is_docstring(node.body[0]) else []
        body, always_returns = _FunctionReturns(do_return, retval).lower(node.body[len(docstring) :], False)
        first = node.body[len(docstring)]
        prologue: list[gast.stmt] = [_located(_assign(do_return, gast.Constant(value=False, kind=None)), first)]
        if not always_returns:
            prologue.append(_located(_assign(retval, gast.Constant(value=None, kind=None)), first))
        new_body = prologue + body
        _drop_unread_flag(new_body, do_return)
        epilogue = _located(gast.Return(value=_name(retval)), node.body[-1])
        node.body = docstring + new_body + [epilogue]
        return node


def transform(tree: gast.AST, ctx: Context) -> gast.AST:
    """Lower the early returns of every function in ``tree``."""
    return ReturnTransformer(ctx).visit(tree)
