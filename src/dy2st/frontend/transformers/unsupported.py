"""Reject constructs that cannot be converted, each with one short message at the user's line.

Runs before every converter. Only constructs that can never work in a converted function are
refused here; constructs that are fine in Python-valued code but not under tensor control flow are
refused by the control-flow converters where they meet them.
"""

from __future__ import annotations

import gast

from dy2st.errors import UnsupportedSyntaxError
from dy2st.frontend.transformer import Context

_MESSAGES = {
    gast.Yield: "'yield' (generator functions) cannot be converted",
    gast.YieldFrom: "'yield from' (generator functions) cannot be converted",
    gast.Await: "'await' cannot be converted",
    gast.Global: "'global' declarations cannot be converted: a converted function cannot write module globals",
    gast.Nonlocal: "'nonlocal' declarations in the converted function cannot be converted",
}


class _Checker(gast.NodeVisitor):
    def __init__(self, ctx: Context, top: gast.FunctionDef):
        self.ctx = ctx
        self.top = top
        self.depth = 0

    def visit_FunctionDef(self, node):
        # Nested helper functions may use nonlocal/global for their own purposes only if they
        # stay Python; yields anywhere still make a generator, which we refuse.
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    def generic_visit(self, node):
        message = _MESSAGES.get(type(node))
        if message is not None and not (isinstance(node, gast.Nonlocal) and self.depth > 1):
            raise UnsupportedSyntaxError(message, self.ctx.info.location(node))
        super().generic_visit(node)


def check(tree: gast.AST, ctx: Context) -> None:
    """Raise ``UnsupportedSyntaxError`` at the first construct that can never be converted."""
    top = tree.body[0]
    _Checker(ctx, top).visit(tree)
