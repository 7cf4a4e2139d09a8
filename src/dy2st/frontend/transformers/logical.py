"""Route ``and``/``or``/``not``, chained comparisons and ternaries through the runtime.

Before::

    if a and not b or lo < x <= hi:
        y = u if c else v

After::

    if _dy2st.convert_logical_or(lambda: _dy2st.convert_logical_and(lambda: a, lambda:
            _dy2st.convert_logical_not(b)), lambda: _dy2st.convert_compare_chain(lambda: lo,
            ('Lt', lambda: x), ('LtE', lambda: hi))):
        y = _dy2st.convert_ifexp(c, lambda: u, lambda: v)

Operands become lambdas so that the runtime evaluates them lazily, in Python's order: Python values
keep short-circuiting, tensors become logical ops (see ``dy2st.runtime.control_flow.logical``). A single
comparison ``a < b`` is left alone: the tensor operators already stage it.

Expressions holding an assignment expression (``:=``) are left unconverted, since a lambda would
give the assigned name a scope of its own; so are class bodies, whose names a lambda cannot see.
"""

from __future__ import annotations

import gast

from dy2st.frontend.transformer import Context, Transformer, runtime_attr


def make_lambda(body: gast.expr) -> gast.Lambda:
    """``lambda: body``."""
    no_args = gast.arguments(
        args=[], posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]
    )
    return gast.Lambda(args=no_args, body=body)


def _runtime_call(helper: str, args: list[gast.expr]) -> gast.Call:
    return gast.Call(func=runtime_attr(helper), args=args, keywords=[])


def _has_named_expr(node: gast.AST) -> bool:
    return any(isinstance(n, gast.NamedExpr) for n in gast.walk(node))


# Set on a BoolOp whose value is only tested for truth (an if/while/assert/ternary test, the
# operand of `not`, or an operand of such a BoolOp): its tensor form may be a bool.
_TRUTH_ONLY = "_dy2st_truth_only"


def _mark_truth_only(node: gast.AST) -> None:
    if isinstance(node, (gast.BoolOp, gast.UnaryOp)):
        setattr(node, _TRUTH_ONLY, True)


class LogicalTransformer(Transformer):
    """Rewrites ``BoolOp``, ``not``, chained ``Compare`` and ``IfExp`` into runtime calls."""

    def visit_ClassDef(self, node: gast.ClassDef) -> gast.ClassDef:
        # A lambda in a class body cannot see the class's names; such code stays Python.
        return node

    def visit_If(self, node: gast.If) -> gast.If:
        _mark_truth_only(node.test)
        self.generic_visit(node)
        return node

    def visit_While(self, node: gast.While) -> gast.While:
        _mark_truth_only(node.test)
        self.generic_visit(node)
        return node

    def visit_Assert(self, node: gast.Assert) -> gast.Assert:
        _mark_truth_only(node.test)
        self.generic_visit(node)
        return node

    def visit_BoolOp(self, node: gast.BoolOp) -> gast.expr:
        truth_only = getattr(node, _TRUTH_ONLY, False)
        if truth_only:
            for operand in node.values:
                _mark_truth_only(operand)
        self.generic_visit(node)
        if _has_named_expr(node):
            return node
        helper = "convert_logical_and" if isinstance(node.op, gast.And) else "convert_logical_or"
        keywords = [gast.keyword(arg="truth_only", value=gast.Constant(value=True, kind=None))] if truth_only else []
        # `a and b and c` is `a and (b and c)` in Python's evaluation and result.
        result = node.values[-1]
        for operand in reversed(node.values[:-1]):
            result = _runtime_call(helper, [make_lambda(operand), make_lambda(result)])
            result.keywords = list(keywords)
        return result

    def visit_UnaryOp(self, node: gast.UnaryOp) -> gast.expr:
        if isinstance(node.op, gast.Not):
            _mark_truth_only(node.operand)
        self.generic_visit(node)
        if not isinstance(node.op, gast.Not):
            return node
        return _runtime_call("convert_logical_not", [node.operand])

    def visit_Compare(self, node: gast.Compare) -> gast.expr:
        self.generic_visit(node)
        if len(node.ops) == 1 or _has_named_expr(node):
            return node
        links = [
            gast.Tuple(elts=[gast.Constant(value=type(op).__name__, kind=None), make_lambda(operand)], ctx=gast.Load())
            for op, operand in zip(node.ops, node.comparators)
        ]
        return _runtime_call("convert_compare_chain", [make_lambda(node.left), *links])

    def visit_IfExp(self, node: gast.IfExp) -> gast.expr:
        _mark_truth_only(node.test)
        self.generic_visit(node)
        if _has_named_expr(node.body) or _has_named_expr(node.orelse):
            return node
        return _runtime_call("convert_ifexp", [node.test, make_lambda(node.body), make_lambda(node.orelse)])


def transform(tree: gast.AST, ctx: Context) -> gast.AST:
    """Convert every logical expression, chained comparison and ternary in ``tree``."""
    return LogicalTransformer(ctx).visit(tree)
