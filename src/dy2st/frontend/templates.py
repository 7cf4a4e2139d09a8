"""AST templates with named placeholders: the one way converters build generated code.

``template("name = _dy2st.convert_ifelse(pred, true_fn, false_fn)", name="y", pred=node.test, ...)``
parses the source once (cached), forgets its line numbers (the generated code is placed at the
converted statement later, see ``place_at``) and substitutes each placeholder, a plain identifier
in the template, by the keyword argument of that name:

  * a gast node: the node itself (it keeps its own location, so errors point at the user's code);
  * a string: an identifier, renaming the placeholder wherever it names a variable, a parameter,
    a function, an attribute (``_dy2st.helper``) or a ``nonlocal`` name;
  * a tuple of strings: names, a tuple of them as an expression (``get_state`` returns it,
    ``set_state`` assigns it) or the names listed in ``nonlocal``.

Python values go in as ``literal(value)``.
"""

from __future__ import annotations

from typing import Any

import gast

from dy2st.frontend.transformer import parse_expr, parse_stmts, walk


def template(source: str, **replacements: Any) -> list[gast.stmt]:
    """The statements ``source`` with each placeholder replaced (see the module docstring)."""
    statements = strip_locations(parse_stmts(source))
    substitute = _Substitute(replacements)
    return [substitute.visit(stmt) for stmt in statements]


def template_expr(source: str, **replacements: Any) -> gast.expr:
    """The expression ``source`` with each placeholder replaced (see the module docstring)."""
    (expression,) = strip_locations([parse_expr(source)])
    return _Substitute(replacements).visit(expression)


def literal(value: Any) -> gast.expr:
    """A Python value (a string, a tuple of strings...) as the expression that spells it."""
    return strip_locations([parse_expr(repr(value))])[0]


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


class _Substitute(gast.NodeTransformer):
    """Replaces placeholders; replacement nodes are inserted as they are, never visited."""

    def __init__(self, replacements: dict[str, Any]):
        self.replacements = replacements

    def visit_Name(self, node: gast.Name) -> gast.AST:
        if node.id not in self.replacements:
            return node
        value = self.replacements[node.id]
        if isinstance(value, str):
            node.id = value
            return node
        if isinstance(value, tuple):
            elements = [gast.Name(id=n, ctx=type(node.ctx)(), annotation=None, type_comment=None) for n in value]
            return gast.Tuple(elts=elements, ctx=type(node.ctx)())
        return value

    def visit_Attribute(self, node: gast.Attribute) -> gast.Attribute:
        self.generic_visit(node)
        value = self.replacements.get(node.attr)
        if isinstance(value, str):
            node.attr = value
        return node

    def visit_FunctionDef(self, node: gast.FunctionDef) -> gast.FunctionDef:
        node.name = self.replacements.get(node.name, node.name)
        self.generic_visit(node)
        return node

    def visit_Nonlocal(self, node: gast.Nonlocal) -> gast.Nonlocal:
        names: list[str] = []
        for name in node.names:
            value = self.replacements.get(name, name)
            names.extend((value,) if isinstance(value, str) else value)
        node.names = names
        return node
