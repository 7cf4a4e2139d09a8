"""The base class of every converter, and the context they share."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

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

    ``visit`` and ``generic_visit`` do what ``ast.NodeTransformer``'s do, faster: each converter
    walks the whole tree, and the standard dispatch (a ``getattr`` per node, generators over
    the fields) was half of converting a function. Visitor methods are looked up once per node
    class, and a node without fields and without a visitor (``Load``, ``Add``) is returned as is.
    """

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def visit(self, node):
        method = _visitor_method(type(self), type(node))  # type: ignore[arg-type]  # classes are hashable
        if method is None:
            return self.generic_visit(node) if node._fields else node
        result = method(self, node)
        if result is not None and result is not node:
            for new in result if isinstance(result, list) else [result]:
                if isinstance(new, gast.AST):
                    copy_location_deep(new, node)
        return result

    def generic_visit(self, node):
        for name in node._fields:
            try:
                old = getattr(node, name)
            except AttributeError:
                continue
            if isinstance(old, list):
                new_values = []
                for value in old:
                    if isinstance(value, gast.AST):
                        value = self.visit(value)
                        if value is None:
                            continue
                        if not isinstance(value, gast.AST):
                            new_values.extend(value)
                            continue
                    new_values.append(value)
                old[:] = new_values
            elif isinstance(old, gast.AST):
                new = self.visit(old)
                if new is None:
                    delattr(node, name)
                else:
                    setattr(node, name, new)
        return node


@cache
def _visitor_method(transformer: type, node_class: type):
    """The ``visit_<NodeClass>`` function of a transformer class, or None (then generic_visit).

    ``ast.NodeVisitor``'s own ``visit_Constant`` only serves the long-deprecated ``visit_Num``
    family, which no converter defines, so it counts as None.
    """
    method = getattr(transformer, "visit_" + node_class.__name__, None)
    return None if method is gast.NodeVisitor.__dict__.get("visit_Constant") else method


def walk(tree: gast.AST):
    """Every node of ``tree``, depth first (``gast.walk`` goes breadth first at twice the cost;
    use this where the order does not matter)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if not isinstance(node, gast.AST):  # a list field may hold strings (``global`` names)
            continue
        yield node
        for name in node._fields:
            value = getattr(node, name, None)
            if type(value) is list:
                stack.extend(value)
            elif isinstance(value, gast.AST):
                stack.append(value)


def copy_location_deep(new: gast.AST, old: gast.AST) -> None:
    """Give ``new`` and its descendants ``old``'s location wherever they have none."""
    if not hasattr(old, "lineno"):
        return
    for n in walk(new):
        if "lineno" in n._attributes and getattr(n, "lineno", None) is None:
            n.lineno = old.lineno
            n.col_offset = getattr(old, "col_offset", 0)
            n.end_lineno = getattr(old, "end_lineno", old.lineno)
            n.end_col_offset = getattr(old, "end_col_offset", n.col_offset)


def runtime_attr(name: str) -> gast.Attribute:
    """``_dy2st.name``: a reference to a runtime helper."""
    return gast.Attribute(
        value=gast.Name(id=RUNTIME_ALIAS, ctx=gast.Load(), annotation=None, type_comment=None),
        attr=name,
        ctx=gast.Load(),
    )


def parse_expr(source: str) -> gast.expr:
    """The expression ``source`` as a new gast tree (the caller may change it)."""
    return _clone(_parsed(source).body[0].value)


def parse_stmts(source: str) -> list[gast.stmt]:
    """The statements ``source`` as new gast trees (the caller may change them)."""
    return [_clone(stmt) for stmt in _parsed(source).body]


@lru_cache(maxsize=512)
def _parsed(source: str) -> gast.Module:
    # Converters parse the same templates again and again (the same helper names, the same state
    # tuples); copying a parsed tree costs a quarter of parsing it again. Never handed out.
    return gast.parse(source)


def _clone(node: gast.AST) -> gast.AST:
    """A deep copy of a gast tree (four times faster than ``copy.deepcopy``: fields are only
    nodes, lists of nodes and immutable values)."""
    fields = node.__dict__.copy()
    for name, value in fields.items():
        if type(value) is list:
            fields[name] = [_clone(item) if isinstance(item, gast.AST) else item for item in value]
        elif isinstance(value, gast.AST):
            fields[name] = _clone(value)
    cls: Any = type(node)
    new = cls.__new__(cls)
    new.__dict__.update(fields)
    return new
