"""Which variable names a statement or block reads and writes, within one function scope.

Rules (Python 3 scoping):
  * ``x = ...``, ``for x in``, ``with ... as x``, ``import x``, ``def x``, ``class x``, ``del x``
    write ``x``; only a plain name target *kills* (rebinds) it.
  * ``a[i] = v``, ``a.f = v`` and ``a += v`` read and write ``a``: they update the object ``a``
    names, so a converter must carry ``a`` out of the block that updates it.
  * A nested function or lambda reads its free variables; a nested function also writes what it
    declares ``nonlocal``. Comprehension variables are local to the comprehension.

Example: for ``y = x + 1; a[i] = y`` the reads are ``{x, a, i, y}`` and the writes ``{y, a}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import gast

_FUNCTIONS = (gast.FunctionDef, gast.AsyncFunctionDef)
_COMPREHENSIONS = (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)


@dataclass
class Usage:
    """Names read and written by some code, in first-seen order (so generated code is stable)."""

    reads: dict[str, None] = field(default_factory=dict)
    writes: dict[str, None] = field(default_factory=dict)
    kills: dict[str, None] = field(default_factory=dict)

    def read(self, name: str) -> None:
        self.reads.setdefault(name, None)

    def write(self, name: str, kill: bool = False) -> None:
        self.writes.setdefault(name, None)
        if kill:
            self.kills.setdefault(name, None)


class _UsageVisitor(gast.NodeVisitor):
    """Collects a ``Usage``; does not descend into nested scopes except for their free names."""

    def __init__(self):
        self.usage = Usage()

    # --- names and targets -----------------------------------------------------------------
    def visit_Name(self, node: gast.Name) -> None:
        if isinstance(node.ctx, gast.Load):
            self.usage.read(node.id)
        elif isinstance(node.ctx, gast.Store):
            self.usage.write(node.id, kill=True)
        elif isinstance(node.ctx, gast.Del):
            self.usage.write(node.id, kill=True)
        if node.annotation is not None:
            self.visit(node.annotation)

    def _updated_object(self, node: gast.expr) -> None:
        """``a[i] = v`` / ``a.f = v``: the base name is read and written (its object changes)."""
        base = node
        while isinstance(base, (gast.Subscript, gast.Attribute, gast.Starred)):
            base = base.value
        if isinstance(base, gast.Name):
            self.usage.read(base.id)
            self.usage.write(base.id)
        self.generic_visit(node)

    def visit_Subscript(self, node: gast.Subscript) -> None:
        if isinstance(node.ctx, (gast.Store, gast.Del)):
            self._updated_object(node)
        else:
            self.generic_visit(node)

    def visit_Attribute(self, node: gast.Attribute) -> None:
        if isinstance(node.ctx, (gast.Store, gast.Del)):
            self._updated_object(node)
        else:
            self.generic_visit(node)

    def visit_AugAssign(self, node: gast.AugAssign) -> None:
        self.visit(node.value)
        if isinstance(node.target, gast.Name):
            self.usage.read(node.target.id)
            self.usage.write(node.target.id, kill=True)
        else:
            self.visit(node.target)

    def visit_Assign(self, node: gast.Assign) -> None:
        # Evaluation order: the value first, then the targets left to right.
        self.visit(node.value)
        for target in node.targets:
            self.visit(target)

    def visit_AnnAssign(self, node: gast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
        self.visit(node.annotation)
        self.visit(node.target)

    def visit_alias(self, node: gast.alias) -> None:
        if node.name != "*":
            self.usage.write(node.asname or node.name.split(".")[0], kill=True)

    # --- nested scopes -----------------------------------------------------------------------
    def visit_FunctionDef(self, node: gast.FunctionDef) -> None:
        for expr in node.decorator_list + node.args.defaults + [d for d in node.args.kw_defaults if d]:
            self.visit(expr)
        for name in free_names(node):
            self.usage.read(name)
        for name in nonlocal_names(node):
            self.usage.read(name)
            self.usage.write(name)
        self.usage.write(node.name, kill=True)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: gast.Lambda) -> None:
        for expr in node.args.defaults + [d for d in node.args.kw_defaults if d]:
            self.visit(expr)
        for name in free_names(node):
            self.usage.read(name)

    def visit_ClassDef(self, node: gast.ClassDef) -> None:
        for expr in node.decorator_list + node.bases + [k.value for k in node.keywords]:
            self.visit(expr)
        inner = block_usage(node.body)
        for name in inner.reads:
            if name not in inner.kills:
                self.usage.read(name)
        self.usage.write(node.name, kill=True)

    def _visit_comprehension(self, node) -> None:
        inner = _UsageVisitor()
        for generator in node.generators:
            inner.visit(generator)
        for part in ("elt", "key", "value"):
            if getattr(node, part, None) is not None:
                inner.visit(getattr(node, part))
        local = inner.usage.kills
        for name in inner.usage.reads:
            if name not in local:
                self.usage.read(name)
        # Updates of outer objects inside a comprehension (rare) still count as writes.
        for name in inner.usage.writes:
            if name not in local:
                self.usage.write(name)

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _visit_comprehension

    def visit_NamedExpr(self, node: gast.NamedExpr) -> None:
        self.visit(node.value)
        self.visit(node.target)

    # Compound statements: their own expressions and nested blocks, in source order.
    def visit_For(self, node: gast.For) -> None:
        self.visit(node.iter)
        self.visit(node.target)
        for stmt in node.body + node.orelse:
            self.visit(stmt)

    visit_AsyncFor = visit_For


def block_usage(stmts: list[gast.stmt]) -> Usage:
    """The names a list of statements reads and writes."""
    visitor = _UsageVisitor()
    for stmt in stmts:
        visitor.visit(stmt)
    return visitor.usage


def node_usage(node: gast.AST | None) -> Usage:
    """The names one statement or expression reads and writes (empty for None)."""
    visitor = _UsageVisitor()
    if node is not None:
        visitor.visit(node)
    return visitor.usage


def parameter_names(node: gast.FunctionDef | gast.Lambda) -> list[str]:
    args = node.args
    names = [a.id for a in getattr(args, "posonlyargs", []) + args.args + args.kwonlyargs]
    names += [a.id for a in (args.vararg, args.kwarg) if a is not None]
    return names


def nonlocal_names(node: gast.FunctionDef) -> list[str]:
    """Names a function declares ``nonlocal`` (directly in its own body, not in nested defs)."""
    out: dict[str, None] = {}
    for child in _walk_own_scope(node.body):
        if isinstance(child, gast.Nonlocal):
            out.update(dict.fromkeys(child.names))
    return list(out)


def _walk_own_scope(stmts):
    stack = list(stmts)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _FUNCTIONS + (gast.Lambda, gast.ClassDef)):
            continue
        stack.extend(gast.iter_child_nodes(node))


def free_names(node: gast.FunctionDef | gast.Lambda) -> list[str]:
    """Names a nested function or lambda reads from enclosing scopes."""
    body = node.body if isinstance(node, _FUNCTIONS) else [gast.Expr(value=node.body)]
    usage = block_usage(body)
    declared_outer = set(nonlocal_names(node)) if isinstance(node, _FUNCTIONS) else set()
    globals_ = {n for child in _walk_own_scope(body) if isinstance(child, gast.Global) for n in child.names}
    local = (set(parameter_names(node)) | set(usage.writes)) - declared_outer
    return [n for n in usage.reads if n not in local and n not in globals_]
