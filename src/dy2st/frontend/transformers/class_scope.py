"""What a method's body means because Python compiles it inside its class.

Converted code is compiled on its own, outside any class, so two things the class gives a method
are made explicit first, while the body is still the user's:

* Private names are mangled: in ``class Net``, ``self.__bias`` means ``self._Net__bias`` (as do a
  local, parameter or global named ``__bias``). Before::

      return x + self.__bias

  After::

      return x + self._Net__bias

* ``super()`` without arguments finds its class in the ``__class__`` cell Python gives a method
  that uses it, and its instance in the calling function's first argument; converted code has no
  such cell and runs parts of the method in generated nested functions (whose first argument is
  something else). Both are named, and ``__class__`` resolves to the original method's cell
  through the converted function's globals. Before::

      return super().forward(x) * 2

  After::

      return super(__class__, self).forward(x) * 2

  ``super()`` in the user's own nested functions and lambdas keeps its meaning there.
"""

from __future__ import annotations

import gast

from dy2st.frontend.transformer import Context, Transformer


def mangled(name: str, class_name: str) -> str:
    """``name`` as Python spells it inside ``class_name``: ``__x`` becomes ``_Class__x``."""
    owner = class_name.lstrip("_")
    if not name.startswith("__") or name.endswith("__") or "." in name or not owner:
        return name
    return f"_{owner}{name}"


class PrivateNameMangler(Transformer):
    """Mangles the private names of one method (its nested functions included)."""

    def __init__(self, ctx: Context, class_name: str):
        super().__init__(ctx)
        self.class_name = class_name

    def visit_Name(self, node: gast.Name) -> gast.Name:
        self.generic_visit(node)
        node.id = mangled(node.id, self.class_name)
        return node

    def visit_Attribute(self, node: gast.Attribute) -> gast.Attribute:
        self.generic_visit(node)
        node.attr = mangled(node.attr, self.class_name)
        return node

    def visit_FunctionDef(self, node: gast.FunctionDef) -> gast.FunctionDef:
        self.generic_visit(node)
        node.name = mangled(node.name, self.class_name)
        return node

    def visit_ClassDef(self, node: gast.ClassDef) -> gast.ClassDef:
        return node  # a class's body mangles with its own name


class SuperNamer(Transformer):
    """Names the class and instance of each ``super()`` in one method's own body."""

    def __init__(self, ctx: Context, instance: str):
        super().__init__(ctx)
        self.instance = instance

    def visit_Call(self, node: gast.Call) -> gast.Call:
        self.generic_visit(node)
        func = node.func
        if isinstance(func, gast.Name) and func.id == "super" and not node.args and not node.keywords:
            node.args = [_load("__class__"), _load(self.instance)]
        return node

    def _own_scope(self, node: gast.AST) -> gast.AST:
        return node  # a nested function, lambda or class: its super() is its own

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = _own_scope


def _load(name: str) -> gast.Name:
    return gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None)


def transform(tree: gast.Module, ctx: Context) -> gast.AST:
    """Mangle the private names and name the ``super()`` of a method (other functions: as is)."""
    func = tree.body[0]
    params = [*func.args.posonlyargs, *func.args.args]
    if ctx.info.class_name is not None:
        mangler = PrivateNameMangler(ctx, ctx.info.class_name)
        func.args = mangler.visit(func.args)
        func.body = [mangler.visit(statement) for statement in func.body]
    if ctx.info.class_cell and params:  # without a first argument super() fails as it does eagerly
        namer = SuperNamer(ctx, params[0].id)
        func.body = [namer.visit(statement) for statement in func.body]
    return tree
