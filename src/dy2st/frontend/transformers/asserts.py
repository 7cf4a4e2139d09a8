"""Route ``assert`` through the runtime, so a tensor condition becomes a graph assertion.

Before::

    assert np.all(x > 0), "x must be positive"

After::

    _dy2st.convert_assert(np.all(x > 0), lambda: 'x must be positive')

The message is passed as a lambda so that, as in Python, it is evaluated only when a Python
condition fails (a tensor condition needs it while the graph is built).
"""

from __future__ import annotations

import gast

from dy2st.frontend.transformer import Context, Transformer, runtime_attr
from dy2st.frontend.transformers.logical import make_lambda


class AssertTransformer(Transformer):
    """Rewrites each ``assert`` statement into a ``convert_assert`` call."""

    def visit_Assert(self, node: gast.Assert) -> gast.Expr:
        self.generic_visit(node)
        args = [node.test]
        if node.msg is not None:
            args.append(make_lambda(node.msg))
        call = gast.Call(func=runtime_attr("convert_assert"), args=args, keywords=[])
        return gast.Expr(value=call)


def transform(tree: gast.AST, ctx: Context) -> gast.AST:
    """Convert every ``assert`` in ``tree``."""
    return AssertTransformer(ctx).visit(tree)
