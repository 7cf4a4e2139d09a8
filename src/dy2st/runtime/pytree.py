"""Flatten nested tuples/lists/dicts of arrays into leaves plus a hashable structure, and back.

The structure ("treedef") doubles as the cache key of a graph: it holds the shape and dtype of each
array leaf and the value of each Python constant, exactly the input signature of section 2 of the
design.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

import numpy as np

from dy2st.errors import UnsupportedOpError, user_location

_CONSTANT_TYPES = (bool, int, float, complex, str, bytes, type(None), type(Ellipsis), slice, type)


# Compared by value in a guard; other objects (functions, generators, user objects) by identity.
_VALUE_TYPES = (bool, int, float, complex, str, bytes, type(None), type(Ellipsis), slice, range, np.generic, np.dtype)
# How deep containers are compared item by item; deeper ones compare by identity.
_KEY_DEPTH = 8


def constant_key(value: Any, depth: int = 0) -> tuple[Any, ...]:
    """What identifies a Python constant in a cache key or guard: its type and value, with floats
    compared by their bits, so ``-0.0`` is not ``0.0`` (``1.0 / -0.0`` is ``-inf``) and a NaN
    matches a NaN (``==`` would build a new graph at every call).

    Lists, tuples, dicts and sets are keyed by a snapshot of their items, so changing one in place
    (``CFG["scale"] = 3.0``) changes the key; functions and other objects are keyed by identity
    (rebinding ``ACT = np.sin`` changes it, and no user ``__eq__`` runs).
    """
    if isinstance(value, (float, np.floating)):
        return (type(value), float(value).hex())
    if isinstance(value, (complex, np.complexfloating)):
        return (type(value), complex(value).real.hex(), complex(value).imag.hex())
    if isinstance(value, _VALUE_TYPES) or isinstance(value, type):
        return (type(value), value)
    if depth < _KEY_DEPTH:
        if type(value) in (list, tuple):
            return (type(value), tuple(constant_key(item, depth + 1) for item in value))
        if type(value) is dict:
            return (dict, tuple((constant_key(k, depth + 1), constant_key(v, depth + 1)) for k, v in value.items()))
        if type(value) in (set, frozenset):
            return (type(value), frozenset(constant_key(item, depth + 1) for item in value))
    return (type(value), Identity(value))


class Constant:
    """A Python constant in a tree definition: equal to another by ``constant_key``."""

    __slots__ = ("value", "key")

    def __init__(self, value: Any):
        self.value = value
        self.key = constant_key(value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Constant) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return repr(self.value)


# Python numbers a call passes as graph inputs rather than constants (docs/daily-use.md, "Python
# numbers as graph inputs"); bools stay constants (flags that pick code paths), and so do ints
# that a graph's int64 cannot hold.
_INT64_RANGE = range(-(2**63), 2**63)


def is_number_input(x: Any) -> bool:
    """Is ``x`` a Python number a call passes to its graph as an input: a float, or an int that
    fits in int64 (``type`` is exact: bools and NumPy scalars are not)?"""
    kind = type(x)
    return kind is float or (kind is int and x in _INT64_RANGE)


def is_array_or_number_input(x: Any) -> bool:
    """The leaves of an argument whose Python numbers are graph inputs."""
    return is_number_input(x) or is_array(x)


def _python_number(leaf: Any) -> Any:
    return leaf.item() if isinstance(leaf, (np.ndarray, np.generic)) else leaf


class Identity:
    """Wraps an arbitrary object so it compares and hashes by identity in a cache key.

    ``weak``: hold the object by a weak reference where it allows one, so that a cache key does
    not keep it alive (a converted method's instance). Once the object is gone the identity
    equals nothing, not even a new object that happens to get the same ``id``; ``alive`` says
    whether it is still there (caches drop such keys).
    """

    __slots__ = ("_held", "_ref", "_id")

    def __init__(self, obj: Any, weak: bool = False):
        self._id = id(obj)
        self._held: Any = obj
        self._ref: weakref.ref[Any] | None = None
        if weak:
            try:
                self._ref, self._held = weakref.ref(obj), None
            except TypeError:  # no weak references to it (a list, an int subclass...): held
                pass

    @property
    def obj(self) -> Any:
        return self._held if self._ref is None else self._ref()

    @property
    def alive(self) -> bool:
        return self._ref is None or self._ref() is not None

    def __eq__(self, other) -> bool:
        if not isinstance(other, Identity) or other._id != self._id:
            return False
        obj = self.obj
        return obj is other.obj and (obj is not None or self._ref is None)

    def __hash__(self) -> int:
        return self._id

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


class TreeDef(NamedTuple):
    """The structure of a nested value: what ``flatten`` keeps besides the leaves.

    Hashable and compared by value, so it serves as (part of) a cache key. ``kind`` says what the
    node is; ``children`` are the structures of its elements; ``data`` holds what else rebuilding
    it needs: a leaf's (shape, dtype, is NumPy scalar) when it is an array, a named tuple's class,
    a dict's keys, a constant's ``Constant``, an opaque object's ``Identity``.
    """

    kind: str
    children: tuple[TreeDef, ...] = ()
    data: Any = None

    @property
    def is_leaf(self) -> bool:
        return self.kind == LEAF

    def unflatten(self, leaves: Iterator[Any], hook: Callable[[Any], Any] | None = None) -> Any:
        """The value with this structure, taking leaves from ``leaves`` in order."""
        kind = self.kind
        if kind == LEAF:
            return next(leaves)
        if kind == PYTHON_NUMBER:  # a Python number in eager code: a 0-d array, a NumPy scalar or
            return _python_number(next(leaves))  # already the Python number here
        if kind == TUPLE:
            return tuple(c.unflatten(leaves, hook) for c in self.children)
        if kind == NAMED_TUPLE:
            return self.data(*(c.unflatten(leaves, hook) for c in self.children))
        if kind == LIST:
            return [c.unflatten(leaves, hook) for c in self.children]
        if kind == DICT:
            return {k: c.unflatten(leaves, hook) for k, c in zip(self.data, self.children)}
        if kind == CONSTANT:
            return self.data.value
        obj = self.data.obj
        return hook(obj) if hook is not None else obj

    def structure(self) -> TreeDef:
        """This structure without the leaves' shapes and dtypes (to compare branches leaf by leaf)."""
        if self.kind == LEAF:
            return TreeDef(LEAF)
        if self.kind in _CONTAINERS:
            return TreeDef(self.kind, tuple(c.structure() for c in self.children), self.data)
        return self

    def map_leaves(self, change: Callable[[TreeDef], TreeDef]) -> TreeDef:
        """This structure with every leaf replaced by ``change(leaf)``, in leaf order."""
        if self.kind == LEAF:
            return change(self)
        if self.kind in _CONTAINERS:
            return TreeDef(self.kind, tuple(c.map_leaves(change) for c in self.children), self.data)
        return self

    def alive(self) -> bool:
        """Are the objects this structure holds weakly (``Identity``) all still there?"""
        if self.kind == OBJECT:
            return bool(self.data.alive)
        return all(child.alive() for child in self.children)

    def leaf_paths(self, name: str) -> list[str]:
        """Readable names for the leaves: ``x``, ``x_0``, ``x_w``..."""
        if self.kind in (LEAF, PYTHON_NUMBER):
            return [name]
        if self.kind in (TUPLE, LIST):
            labels: Iterable[Any] = range(len(self.children))
        elif self.kind == NAMED_TUPLE:
            labels = self.data._fields
        elif self.kind == DICT:
            labels = self.data
        else:
            return []
        return [path for label, c in zip(labels, self.children) for path in c.leaf_paths(f"{name}_{label}")]


# TreeDef kinds.
LEAF, PYTHON_NUMBER, TUPLE, NAMED_TUPLE, LIST, DICT, CONSTANT, OBJECT = (
    "leaf",
    "python number",
    "tuple",
    "named tuple",
    "list",
    "dict",
    "constant",
    "object",
)
_CONTAINERS = frozenset({TUPLE, NAMED_TUPLE, LIST, DICT})
ANY_LEAF = TreeDef(LEAF)
"""The structure of a single leaf whose type is not recorded (branch results, loop variables)."""
PYTHON_NUMBER_LEAF = TreeDef(PYTHON_NUMBER)
"""A result leaf that eager code returns as a Python number (rebuilt with ``.item()``)."""


def flatten(
    obj: Any,
    leaves: list[Any],
    is_leaf: Callable[[Any], bool] = is_array,
    weak_objects: bool = False,
    typed_numbers: bool = False,
) -> TreeDef:
    """Append ``obj``'s leaves to ``leaves`` and return its structure. ``weak_objects``: opaque
    objects are held by weak references where they allow one (``Identity``). ``typed_numbers``:
    a Python number leaf (``is_number_input``) is recorded by its type (a graph input's key)."""
    if is_leaf(obj):
        leaves.append(obj)
        if is_array(obj):
            # The dtype with its byte order: a big-endian and a native argument get graphs of their
            # own, since a graph bakes in the argument's byte order where eager results keep it
            # (`np.zeros_like(x)`, `x` returned after `x += 1`).
            return TreeDef(LEAF, (), (tuple(obj.shape), obj.dtype, isinstance(obj, np.generic)))
        if typed_numbers and is_number_input(obj):  # by its type alone: its value is the graph's input
            return TreeDef(PYTHON_NUMBER, (), type(obj))
        return ANY_LEAF
    if type(obj) is tuple:
        return TreeDef(TUPLE, tuple(flatten(x, leaves, is_leaf, weak_objects, typed_numbers) for x in obj))
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return TreeDef(
            NAMED_TUPLE, tuple(flatten(x, leaves, is_leaf, weak_objects, typed_numbers) for x in obj), type(obj)
        )
    if type(obj) is list:
        return TreeDef(LIST, tuple(flatten(x, leaves, is_leaf, weak_objects, typed_numbers) for x in obj))
    if type(obj) is dict:
        return TreeDef(
            DICT, tuple(flatten(v, leaves, is_leaf, weak_objects, typed_numbers) for v in obj.values()), tuple(obj)
        )
    if isinstance(obj, _CONSTANT_TYPES):
        return TreeDef(CONSTANT, (), Constant(obj))
    return TreeDef(OBJECT, (), Identity(obj, weak_objects))


def unflatten(treedef: TreeDef, leaves: Iterable[Any], object_hook: Callable[[Any], Any] | None = None) -> Any:
    """Rebuild a structure from ``flatten``'s treedef and the leaves.

    ``object_hook``, when given, replaces each opaque (non-constant) object on the way.
    """
    return treedef.unflatten(iter(leaves), object_hook)
