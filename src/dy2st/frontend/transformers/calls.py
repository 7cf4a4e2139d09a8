"""Route calls through ``convert_call`` so user functions are converted too.

Before::

    y = helper(x, 2)

After::

    y = _dy2st.convert_call(helper)(x, 2)

``convert_call`` converts plain Python functions (recursively, once, cached), stages NumPy's array
creation functions, and returns library functions unchanged.
"""

from __future__ import annotations

import gast

from dy2st.frontend.naming import RUNTIME_ALIAS
from dy2st.frontend.transformer import Context, Transformer, runtime_attr

# Calls whose meaning depends on the calling frame; wrapping them would change what they see.
_LEAVE_ALONE = frozenset({"super", "locals", "globals", "vars", "eval", "exec", "dir"})


class CallTransformer(Transformer):
    def visit_Call(self, node: gast.Call) -> gast.Call:
        self.generic_visit(node)
        func = node.func
        if isinstance(func, gast.Name) and func.id in _LEAVE_ALONE:
            return node
        if _is_runtime_ref(func):
            return node
        node.func = gast.Call(func=runtime_attr("convert_call"), args=[func], keywords=[])
        return node


def _is_runtime_ref(func: gast.expr) -> bool:
    while isinstance(func, (gast.Attribute, gast.Call)):
        func = func.value if isinstance(func, gast.Attribute) else func.func
    return isinstance(func, gast.Name) and func.id == RUNTIME_ALIAS


def transform(tree: gast.AST, ctx: Context) -> gast.AST:
    return CallTransformer(ctx).visit(tree)
