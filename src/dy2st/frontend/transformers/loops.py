"""Convert ``while`` and ``for`` loops into condition/body functions and a runtime call.

Before::

    while i < n:
        acc = acc + x[i]
        i += 1

After::

    def loop_cond():
        return i < n

    def loop_body():
        nonlocal acc, i
        acc = acc + x[i]
        i += 1

    def get_state():
        return acc, i

    def set_state(vars_):
        nonlocal acc, i
        acc, i = vars_
    _dy2st.convert_while_loop(loop_cond, loop_body, get_state, set_state, ('acc', 'i'), ('acc', 'i'))

A ``for`` loop's body takes the item and assigns the target itself, and the iterable calls the
runtime must see before Python turns a tensor into an int are rewritten::

    for t in range(n):       ->  def loop_body(item): nonlocal t, h; t = item; ...
        h = step(h, t)           _dy2st.convert_for(_dy2st.for_range(n), loop_body, ...)

The state is every variable the body (and a for target) assigns; the last tuple names the carried
ones, those read before being written in an iteration or used after the loop (static analysis).
``while ... else``/``for ... else`` without ``break`` run the ``else`` block after the loop. A loop
whose body has a construct a graph op cannot express stays a Python loop, its condition wrapped in
``_dy2st.python_bool`` (its iterable in ``_dy2st.python_iterable``), which raises a clear
``UnsupportedSyntaxError`` if the loop turns out to depend on a tensor.
"""

from __future__ import annotations

import gast

from dy2st.frontend.analysis import anno
from dy2st.frontend.naming import RUNTIME_ALIAS
from dy2st.frontend.templates import literal, place_at, template
from dy2st.frontend.transformer import Context, runtime_attr
from dy2st.frontend.transformers.helpers import (
    ScopedTransformer,
    blocker,
    ensure_analysed,
    nonlocal_function,
    runtime_wrap,
    state_functions,
)

# Iterable constructors the runtime stages when an argument is a tensor.
_STAGED_ITERABLES = {"range": "for_range", "enumerate": "for_enumerate", "zip": "for_zip"}


class LoopTransformer(ScopedTransformer):
    def visit_While(self, node: gast.While):
        self.generic_visit(node)
        if not anno.has(node, anno.LIVE_HEAD):
            return node
        blocked = blocker(node.body, self.ctx)
        if blocked is not None:
            node.test = runtime_wrap("python_bool", node.test, blocked)
            return node
        names, carried = self._state(node)
        namer = self.ctx.namer
        cond_name, body_name = namer.new("loop_cond"), namer.new("loop_body")
        get_name, set_name = namer.new("get_state"), namer.new("set_state")
        (loop_cond,) = template("def loop_cond():\n    return test", loop_cond=cond_name, test=node.test)
        (call,) = template(
            "_dy2st.convert_while_loop(loop_cond, loop_body, get_state, set_state, names, carried)",
            loop_cond=cond_name,
            loop_body=body_name,
            get_state=get_name,
            set_state=set_name,
            names=literal(names),
            carried=literal(carried),
        )
        statements = [
            loop_cond,
            nonlocal_function(body_name, "", names, node.body),
            *state_functions(get_name, set_name, names, self.ctx),
            call,
        ]
        return place_at(statements, node) + node.orelse

    def visit_For(self, node: gast.For):
        self.generic_visit(node)
        if not anno.has(node, anno.LIVE_HEAD):
            return node
        iterable = _staged_iterable(node.iter)
        blocked = blocker(node.body, self.ctx)
        if blocked is not None:
            node.iter = runtime_wrap("python_iterable", iterable, blocked)
            return node
        names, carried = self._state(node)
        namer = self.ctx.namer
        body_name, item_name = namer.new("loop_body"), namer.new("item")
        get_name, set_name = namer.new("get_state"), namer.new("set_state")
        bind_target = gast.Assign(
            targets=[node.target], value=gast.Name(id=item_name, ctx=gast.Load(), annotation=None, type_comment=None)
        )
        gast.copy_location(bind_target, node.target)
        (call,) = template(
            "_dy2st.convert_for(iterable, loop_body, get_state, set_state, names, carried)",
            iterable=iterable,
            loop_body=body_name,
            get_state=get_name,
            set_state=set_name,
            names=literal(names),
            carried=literal(carried),
        )
        statements = [
            nonlocal_function(body_name, item_name, names, [bind_target, *node.body]),
            *state_functions(get_name, set_name, names, self.ctx),
            call,
        ]
        return place_at(statements, node) + node.orelse

    def _state(self, node: gast.While | gast.For) -> tuple[tuple[str, ...], tuple[str, ...]]:
        names = self.state_names(anno.get(node, anno.MODIFIED))
        head = anno.get(node, anno.LIVE_HEAD)
        return names, tuple(n for n in names if n in head)


def _staged_iterable(node: gast.expr) -> gast.expr:
    """Route ``range``/``enumerate``/``zip`` calls (and those nested in them) to the runtime.

    The iterable of a loop with a lowered ``break`` arrives wrapped as
    ``_dy2st.iterate_until(iterable, stop_fn)``; the wrapped iterable is rewritten.
    """
    if not isinstance(node, gast.Call):
        return node
    func = node.func
    if isinstance(func, gast.Name) and func.id in _STAGED_ITERABLES:
        node.func = place_at([runtime_attr(_STAGED_ITERABLES[func.id])], func)[0]
        node.args = [_staged_iterable(a) for a in node.args]
    elif _is_runtime_helper(func, "iterate_until") and node.args:
        node.args[0] = _staged_iterable(node.args[0])
    return node


def _is_runtime_helper(func: gast.expr, name: str) -> bool:
    return (
        isinstance(func, gast.Attribute)
        and func.attr == name
        and isinstance(func.value, gast.Name)
        and func.value.id == RUNTIME_ALIAS
    )


def transform(tree: gast.AST, ctx: Context) -> gast.AST:
    """Convert every ``while`` and ``for`` of the function (see the module docstring)."""
    ensure_analysed(tree, ctx)
    return LoopTransformer(ctx).visit(tree)
