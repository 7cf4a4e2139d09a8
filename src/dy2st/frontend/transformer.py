"""The base class of every converter, and the context they share."""

from __future__ import annotations

from dataclasses import dataclass, field

import gast

from dy2st.frontend.naming import RUNTIME_ALIAS, Namer
from dy2st.frontend.parser import SourceInfo


@dataclass
class Context:
    """What every transformer of one function conversion shares."""

    info: SourceInfo
    namer: Namer
    notes: dict = field(default_factory=dict)


class Transformer(gast.NodeTransformer):
    """A gast NodeTransformer that copies the visited node's location onto replacement nodes.

    Generated nodes thus carry the user's line and column, so the compiled code reports them.
    """

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def visit(self, node):
        result = super().visit(node)
        if result is not None and result is not node:
            for new in result if isinstance(result, list) else [result]:
                if isinstance(new, gast.AST):
                    copy_location_deep(new, node)
        return result


def copy_location_deep(new: gast.AST, old: gast.AST) -> None:
    """Give ``new`` and its descendants ``old``'s location wherever they have none."""
    if not hasattr(old, "lineno"):
        return
    for n in gast.walk(new):
        if "lineno" in n._attributes and getattr(n, "lineno", None) is None:
            n.lineno = old.lineno
            n.col_offset = getattr(old, "col_offset", 0)
            n.end_lineno = getattr(old, "end_lineno", old.lineno)
            n.end_col_offset = getattr(old, "end_col_offset", n.col_offset)


def runtime_attr(name: str) -> gast.Attribute:
    """``_dy2st.name``: a reference to a runtime helper."""
    return gast.Attribute(value=gast.Name(id=RUNTIME_ALIAS, ctx=gast.Load(), annotation=None, type_comment=None),
                          attr=name, ctx=gast.Load())


def parse_expr(source: str) -> gast.expr:
    return gast.parse(source).body[0].value


def parse_stmts(source: str) -> list[gast.stmt]:
    return gast.parse(source).body
