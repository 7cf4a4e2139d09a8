"""Fresh names for generated code that never clash with a name the function uses."""

from __future__ import annotations

import builtins

import gast

from dy2st.frontend.reserved_names import RUNTIME_ALIAS


class Namer:
    """Hands out ``stem``, ``stem_1``, ... avoiding every name in the function and the builtins.

    Deterministic: the same function always gets the same names, so golden tests are stable.
    """

    def __init__(self, reserved: set[str]):
        self.taken = set(reserved) | set(dir(builtins)) | {RUNTIME_ALIAS}

    @classmethod
    def for_tree(cls, tree: gast.AST) -> Namer:
        names = set()
        for node in gast.walk(tree):
            if isinstance(node, gast.Name):
                names.add(node.id)
            elif isinstance(node, (gast.FunctionDef, gast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, gast.alias):
                names.add(node.asname or node.name.split(".")[0])
        return cls(names)

    def new(self, stem: str) -> str:
        name, n = stem, 0
        while name in self.taken:
            n += 1
            name = f"{stem}_{n}"
        self.taken.add(name)
        return name
