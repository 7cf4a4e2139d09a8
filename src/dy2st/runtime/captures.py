"""Globals of converted functions: closure variables, and global arrays as graph captures.

A converted function is compiled at module level, so its free variables become global lookups.
``FunctionGlobals`` answers them: first the original closure cells, then the module's globals (read
live, so rebinding is seen), then builtins. While a graph is being built, an ndarray found this way
becomes a *capture* of the graph: a graph argument read by reference from the same global or cell
at every call. Python scalars read this way are recorded as guards: the graph is rebuilt if the
global changes.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np


class GlobalSource:
    """Reads one module global (by name) at every call."""

    __slots__ = ("namespace", "name")

    def __init__(self, namespace: dict, name: str):
        self.namespace = namespace
        self.name = name

    def read(self) -> Any:
        return self.namespace[self.name]

    def key(self) -> tuple:
        return (id(self.namespace), self.name)


class CellSource:
    """Reads one closure cell at every call."""

    __slots__ = ("cell", "name")

    def __init__(self, cell, name: str):
        self.cell = cell
        self.name = name

    def read(self) -> Any:
        return self.cell.cell_contents

    def key(self) -> tuple:
        return (id(self.cell),)


class FunctionGlobals(dict):
    """The globals mapping of a converted function (see the module docstring)."""

    def __init__(self, fn):
        super().__init__()
        from dy2st import runtime

        self.module_globals: dict = fn.__globals__
        self.cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        dict.__setitem__(self, "__builtins__", builtins.__dict__)
        dict.__setitem__(self, "_dy2st", runtime)
        dict.__setitem__(self, "__name__", self.module_globals.get("__name__"))

    def __getitem__(self, name: str) -> Any:
        cell = self.cells.get(name)
        if cell is not None:
            try:
                value = cell.cell_contents
            except ValueError:
                raise NameError(f"free variable '{name}' referenced before assignment") from None
            return _capture(value, CellSource(cell, name))
        if dict.__contains__(self, name):
            return dict.__getitem__(self, name)
        value = self.module_globals[name]  # KeyError -> Python falls back to builtins
        return _capture(value, GlobalSource(self.module_globals, name))

    def __contains__(self, name) -> bool:
        return name in self.cells or dict.__contains__(self, name) or name in self.module_globals

    def get(self, name, default=None):
        try:
            return self[name]
        except KeyError:
            return default


_GUARDED = (bool, int, float, complex, str, type(None), np.generic)


def _capture(value: Any, source) -> Any:
    from dy2st.ir.builder import current_builder

    builder = current_builder()
    if builder is None:
        return value
    if isinstance(value, np.ndarray):
        return builder.capture_tensor(value, source)
    if isinstance(value, _GUARDED):
        builder.guards.append((source, value))
    return value
