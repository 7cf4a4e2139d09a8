"""Flatten nested tuples/lists/dicts of arrays into leaves plus a hashable structure, and back.

The structure ("treedef") doubles as the cache key of a graph: it holds the shape and dtype of each
array leaf and the value of each Python constant, exactly the input signature of section 2 of the
design.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dy2st.errors import UnsupportedOpError, user_location

_CONSTANT_TYPES = (bool, int, float, complex, str, bytes, type(None), type(Ellipsis), slice, type)


class Identity:
    """Wraps an arbitrary object so it compares and hashes by identity in a cache key."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any):
        self.obj = obj

    def __eq__(self, other) -> bool:
        return isinstance(other, Identity) and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __repr__(self) -> str:
        return f"<{type(self.obj).__name__} object>"


# Subclasses whose operators and functions mean what they mean for plain arrays.
PLAIN_ARRAY_TYPES = (np.ndarray, np.memmap)


def is_array(x: Any) -> bool:
    if isinstance(x, np.ndarray) and type(x) not in PLAIN_ARRAY_TYPES:
        refuse_array_subclass(x)
    return isinstance(x, (np.ndarray, np.generic))


def refuse_array_subclass(x: np.ndarray) -> None:
    """ndarray subclasses (np.matrix, masked arrays, ...) give operators other meanings
    (np.matrix's ``*`` is a matrix product): staging them as plain arrays would be wrong."""
    cls = type(x)
    if cls in PLAIN_ARRAY_TYPES:
        return
    raise UnsupportedOpError(
        f"{cls.__module__}.{cls.__qualname__} is a subclass of np.ndarray, which dy2st does not "
        "stage: its operators and functions may mean something else than for plain arrays",
        user_location(),
        "pass a plain array (np.asarray(value)) if plain NumPy semantics are what you want",
    )


def flatten(obj: Any, leaves: list, is_leaf: Callable[[Any], bool] = is_array) -> tuple:
    """Append ``obj``'s leaves to ``leaves`` and return its structure."""
    if is_leaf(obj):
        leaves.append(obj)
        if is_array(obj):
            return ("A", tuple(obj.shape), obj.dtype, isinstance(obj, np.generic))
        return ("A",)
    if type(obj) is tuple:
        return ("T", tuple(flatten(x, leaves, is_leaf) for x in obj))
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return ("N", type(obj), tuple(flatten(x, leaves, is_leaf) for x in obj))
    if type(obj) is list:
        return ("L", tuple(flatten(x, leaves, is_leaf) for x in obj))
    if type(obj) is dict:
        return ("D", tuple(obj), tuple(flatten(v, leaves, is_leaf) for v in obj.values()))
    if isinstance(obj, _CONSTANT_TYPES):
        return ("C", type(obj), obj)
    return ("O", Identity(obj))


def unflatten(treedef: tuple, leaves, object_hook: Callable[[Any], Any] | None = None) -> Any:
    """Rebuild a structure from ``flatten``'s treedef and an iterator of leaves.

    ``object_hook``, when given, replaces each opaque (non-constant) object on the way.
    """
    it = iter(leaves)
    return _build(treedef, it, object_hook)


def _build(treedef: tuple, it, hook=None) -> Any:
    kind = treedef[0]
    if kind == "A":
        return next(it)
    if kind == "P":  # a result that is a Python number in eager code: staged as a 0-d array
        return next(it).item()
    if kind == "T":
        return tuple(_build(t, it, hook) for t in treedef[1])
    if kind == "N":
        return treedef[1](*(_build(t, it, hook) for t in treedef[2]))
    if kind == "L":
        return [_build(t, it, hook) for t in treedef[1]]
    if kind == "D":
        return {k: _build(t, it, hook) for k, t in zip(treedef[1], treedef[2])}
    if kind == "C":
        return treedef[2]
    obj = treedef[1].obj
    return hook(obj) if hook is not None else obj


def leaf_paths(name: str, treedef: tuple) -> list[str]:
    """Readable names for the array leaves of one argument: ``x``, ``x_0``, ``x_w``..."""
    out: list[str] = []

    def walk(t, path):
        kind = t[0]
        if kind == "A":
            out.append(path)
        elif kind in ("T", "L"):
            for i, c in enumerate(t[1]):
                walk(c, f"{path}_{i}")
        elif kind == "N":
            for f, c in zip(t[1]._fields, t[2]):
                walk(c, f"{path}_{f}")
        elif kind == "D":
            for k, c in zip(t[1], t[2]):
                walk(c, f"{path}_{k}")

    walk(treedef, name)
    return out
