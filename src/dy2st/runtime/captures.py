"""Arrays a converted function reads from outside its arguments: captures, read by reference.

A converted function is compiled at module level, so its free variables become global lookups.
``FunctionGlobals`` answers them: first the original closure cells, then the module's globals (read
live, so rebinding is seen), then builtins.

While a graph is being built, every value reached this way goes through ``capture_value``:

* an ndarray becomes a *capture* of the graph: a graph argument read afresh at every call through
  the same access path (``W``, ``self.W``, ``PARAMS['w'][0]``, ``mylib.W``), so in-place updates
  and rebinding are both seen;
* a Python scalar (or NumPy scalar, str, None) is baked into the graph and recorded as a *guard*:
  the graph is rebuilt if the value found through the same path changes; so are functions,
  classes, dtypes, random generators and other objects (by identity), and lists, tuples and dicts
  without arrays inside (by a snapshot of their items, so changing one in place rebuilds too);
  modules are not guarded;
* a list/tuple/dict holding arrays is handed over as a read-only copy whose arrays are captures
  (storing a new item raises), with a guard on its length/keys;
* an instance of a user class, or a user module, is wrapped in ``ObjectProxy`` so that its
  attributes get the same treatment (this is how ``self.W`` works in converted methods); assigning
  an attribute raises, except storing back the array it holds (``self.W += g``).

Captured arrays may be updated in place (``W += g``, ``self.W[i] = v``, ``PARAMS["w"] -= g``): the
update is written back into the array after every call, as for arguments.
"""

from __future__ import annotations

import abc
import builtins
import os
import sys
import types
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from dy2st.errors import GraphBuildError, user_location
from dy2st.frontend.reserved_names import RUNTIME_ALIAS
from dy2st.runtime.pytree import constant_key, refuse_array_subclass
from dy2st.runtime.user_code import library_dirs
from dy2st.staging.builder import current_builder


class _Missing:
    """What a source reads when its path no longer resolves: never matches a graph."""

    def __repr__(self) -> str:
        return "<missing>"


MISSING = _Missing()


class Source(abc.ABC):
    """Where a captured value is read from at every call. Subclasses define ``_read`` and ``key``."""

    __slots__ = ()
    name = "capture"

    @abc.abstractmethod
    def _read(self) -> Any:
        """The value, read afresh (raises if the path no longer leads to one)."""

    @abc.abstractmethod
    def key(self) -> tuple:
        """What identifies this access path (equal keys read the same value)."""

    def read(self) -> Any:
        try:
            return self._read()
        except (KeyError, IndexError, AttributeError, ValueError, TypeError, NameError):
            return MISSING


class GlobalSource(Source):
    """A module global, by name."""

    __slots__ = ("namespace", "name")

    def __init__(self, namespace: dict, name: str):
        self.namespace = namespace
        self.name = name

    def _read(self) -> Any:
        return self.namespace[self.name]

    def key(self) -> tuple:
        return ("global", id(self.namespace), self.name)


class CellSource(Source):
    """A closure cell of the original function."""

    __slots__ = ("cell", "name")

    def __init__(self, cell, name: str):
        self.cell = cell
        self.name = name

    def _read(self) -> Any:
        return self.cell.cell_contents

    def key(self) -> tuple:
        return ("cell", id(self.cell))


class ObjectSource(Source):
    """A fixed object (a non-array argument: it is part of the graph's cache key by identity).

    Held by a weak reference where the object allows one, so that the graphs built for it (a
    converted method's, for its instance) do not keep it alive; reading it once it is gone gives
    ``MISSING``, which no capture or guard accepts."""

    __slots__ = ("_ref", "_held", "_id", "name")

    def __init__(self, obj: Any, name: str):
        self._id = id(obj)
        self.name = name
        self._held: Any = obj
        self._ref: weakref.ref[Any] | None = None
        try:
            self._ref, self._held = weakref.ref(obj), None
        except TypeError:
            pass

    @property
    def obj(self) -> Any:
        return self._held if self._ref is None else self._ref()

    def _read(self) -> Any:
        obj = self.obj
        if obj is None and self._ref is not None:
            raise AttributeError("the object is gone")
        return obj

    def key(self) -> tuple:
        return ("object", self._id)


class AttrSource(Source):
    """``parent.attr``."""

    __slots__ = ("parent", "attr", "name")

    def __init__(self, parent: Source, attr: str):
        self.parent = parent
        self.attr = attr
        self.name = f"{parent.name}.{attr}"

    def _read(self) -> Any:
        return getattr(self.parent._read(), self.attr)

    def key(self) -> tuple:
        return (self.parent.key(), "attr", self.attr)


class ItemSource(Source):
    """``parent[key]``."""

    __slots__ = ("parent", "item", "name")

    def __init__(self, parent: Source, item: Any):
        self.parent = parent
        self.item = item
        self.name = f"{parent.name}_{item}"

    def _read(self) -> Any:
        return self.parent._read()[self.item]

    def key(self) -> tuple:
        return (self.parent.key(), "item", self.item)


class StructureSource(Source):
    """The length (list/tuple) or keys (dict) of a container: guards unrolled iteration."""

    __slots__ = ("parent", "name")

    def __init__(self, parent: Source):
        self.parent = parent
        self.name = parent.name

    def _read(self) -> Any:
        return structure_of(self.parent._read())

    def key(self) -> tuple:
        return (self.parent.key(), "structure")


def structure_of(container: Any) -> tuple:
    if isinstance(container, dict):
        return (type(container).__name__, tuple(container))
    return (type(container).__name__, len(container))


# --- read-only containers ----------------------------------------------------------------------
def _refuse(kind: str):
    def mutator(self, *args, **kwargs):
        raise GraphBuildError(
            f"this {kind} holds arrays read from outside the converted function and cannot be changed inside it",
            user_location(2),
            "build a new list/dict inside the function instead",
        )

    return mutator


def _refuse_new_items(kind: str):
    """``__setitem__`` of a read-only container: storing back the very item it holds is allowed.

    ``PARAMS["w"] += g`` runs ``PARAMS["w"] = PARAMS["w"].__iadd__(g)``: the array is updated in
    place (a captured array, written back after the call) and the item is rebound to the same
    object, which changes nothing. Any other value would change the container itself.
    """
    refuse = _refuse(kind)

    def __setitem__(self, key, value):
        if not isinstance(key, slice) and _holds(self, key, value):
            return
        refuse(self, key, value)

    return __setitem__


def _holds(container: Any, key: Any, value: Any) -> bool:
    try:
        return container[key] is value
    except (IndexError, KeyError, TypeError):
        return False


class FrozenList(list):
    """A list of captured values that refuses in-place changes."""

    __slots__ = ()
    for _m in (
        "append",
        "extend",
        "insert",
        "pop",
        "remove",
        "clear",
        "sort",
        "reverse",
        "__delitem__",
        "__iadd__",
        "__imul__",
    ):
        locals()[_m] = _refuse("list")
    __setitem__ = _refuse_new_items("list")


class FrozenDict(dict):
    """A dict of captured values that refuses in-place changes."""

    __slots__ = ()
    for _m in ("__delitem__", "pop", "popitem", "clear", "update", "setdefault", "__ior__"):
        locals()[_m] = _refuse("dict")
    __setitem__ = _refuse_new_items("dict")


# --- objects -------------------------------------------------------------------------------------
class ObjectProxy:
    """Stands for a user object (or module) while a graph is built; see the module docstring."""

    __slots__ = ("_dy2st_obj", "_dy2st_source")

    def __init__(self, obj: Any, source: Source):
        object.__setattr__(self, "_dy2st_obj", obj)
        object.__setattr__(self, "_dy2st_source", source)

    @property  # type: ignore[misc]  # a read-only __class__ is the point
    def __class__(self):  # isinstance(proxy, UserClass) keeps working
        return type(self._dy2st_obj)

    def __getattr__(self, name: str) -> Any:
        obj = self._dy2st_obj
        value = getattr(obj, name)
        if isinstance(value, types.MethodType) and value.__self__ is obj:
            return types.MethodType(value.__func__, self)
        return capture_value(value, AttrSource(self._dy2st_source, name))

    def __setattr__(self, name: str, value: Any) -> None:
        if self._holds_array(name, value):
            # `self.w += x` runs `self.w = self.w.__iadd__(x)`: the array was updated in place (a
            # captured array, written back after the call) and the attribute is rebound to the
            # same object, which changes nothing.
            return
        raise GraphBuildError(
            f"assigning the attribute '{name}' inside a converted function is not supported: the "
            "assignment would run once, when the graph is built, not at every call",
            user_location(2),
            "return the new value from the function and assign it outside",
        )

    def _holds_array(self, name: str, value: Any) -> bool:
        """Is ``value`` the tensor standing for the array the attribute ``name`` holds now?"""
        held = getattr(self._dy2st_obj, name, MISSING)
        return isinstance(held, np.ndarray) and capture_value(held, AttrSource(self._dy2st_source, name)) is value

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        call = type(self._dy2st_obj).__call__
        return _call_converter[0](types.MethodType(call, self))(*args, **kwargs)

    def __repr__(self) -> str:
        return repr(self._dy2st_obj)


# ``convert_call`` (runtime/calls.py, which imports this module): a captured callable object's
# ``__call__`` runs converted, like any call in converted code.
_call_converter: list[Callable[[Any], Any]] = []


def set_call_converter(convert_call: Callable[[Any], Any]) -> None:
    """Install the function that converts a callable before a captured object calls it."""
    _call_converter[:] = [convert_call]


# --- the capture rule ----------------------------------------------------------------------------
_GUARDED = (bool, int, float, complex, str, bytes, type(None), np.generic)


def _is_user_module(value: Any) -> bool:
    if not isinstance(value, types.ModuleType):
        return False
    filename = getattr(value, "__file__", None)
    return isinstance(filename, str) and bool(filename) and not _in_library(filename)


def _is_user_instance(value: Any) -> bool:
    cls = type(value)
    if cls.__module__ in ("builtins", "__builtin__") or isinstance(
        value, (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType)
    ):
        return False
    module = sys.modules.get(cls.__module__)
    filename = getattr(module, "__file__", None)
    return isinstance(filename, str) and bool(filename) and not _in_library(filename)


def _in_library(filename: str) -> bool:
    return os.path.abspath(filename).startswith(library_dirs())


def _holds_arrays(value: Any, depth: int = 0) -> bool:
    if isinstance(value, np.ndarray):
        return True
    if depth < 4 and type(value) in (list, tuple):
        return any(_holds_arrays(v, depth + 1) for v in value)
    if depth < 4 and type(value) is dict:
        return any(_holds_arrays(v, depth + 1) for v in value.values())
    return False


def capture_value(value: Any, source: Source) -> Any:
    """What converted code sees for ``value`` read through ``source`` (see the module docstring)."""
    builder = current_builder()
    if builder is None:
        return value
    if isinstance(value, np.ndarray):
        if type(value) is not np.ndarray:
            refuse_array_subclass(value)  # returns for np.memmap
        return builder.capture_tensor(value, source)
    if isinstance(value, _GUARDED):
        builder.guards.append((source, value))
        return value
    if type(value) in (list, tuple, dict) and _holds_arrays(value):
        builder.guards.append((StructureSource(source), structure_of(value)))
        if type(value) is dict:
            return FrozenDict({k: capture_value(v, ItemSource(source, k)) for k, v in value.items()})
        items = [capture_value(v, ItemSource(source, i)) for i, v in enumerate(value)]
        return tuple(items) if type(value) is tuple else FrozenList(items)
    if _is_user_module(value) or _is_user_instance(value):
        return ObjectProxy(value, source)
    if isinstance(value, types.ModuleType):
        return value  # `np`, `math`: not guarded (a guard per call for a rebinding nobody does)
    # Functions, classes, dtypes, containers without arrays, library objects: baked into the
    # graph, so guarded by value (containers) or identity (the rest; see constant_key).
    builder.guards.append((source, ReadSnapshot(value) if type(value) in _CONTAINERS else value))
    return value


_CONTAINERS = (list, dict, set)


class ReadSnapshot:
    """A mutable container as it was when the graph read it.

    If the function itself changes the container while the graph is built (a log list it
    appends to), the container is a place the function writes, not a value the graph baked in:
    guarding it would rebuild the graph at every call. ``Program`` drops such guards.
    """

    __slots__ = ("value", "key")

    def __init__(self, value: Any):
        self.value = value
        self.key = constant_key(value)

    def changed(self) -> bool:
        return constant_key(self.value) != self.key


class FunctionGlobals(dict):
    """The globals mapping of a converted function (see the module docstring)."""

    def __init__(self, fn):
        super().__init__()
        # The helpers converted code calls through the alias: the runtime package, always imported
        # before a converted function runs (its own submodules cannot import it).
        runtime = sys.modules["dy2st.runtime"]
        self.module_globals: dict = fn.__globals__
        self.cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        dict.__setitem__(self, "__builtins__", builtins.__dict__)
        dict.__setitem__(self, RUNTIME_ALIAS, runtime)
        dict.__setitem__(self, "__name__", self.module_globals.get("__name__"))

    def __getitem__(self, name: str) -> Any:
        cell = self.cells.get(name)
        if cell is not None:
            try:
                value = cell.cell_contents
            except ValueError:
                raise NameError(f"free variable '{name}' referenced before assignment") from None
            return capture_value(value, CellSource(cell, name))
        if dict.__contains__(self, name):
            return dict.__getitem__(self, name)
        value = self.module_globals[name]  # KeyError -> Python falls back to builtins
        return capture_value(value, GlobalSource(self.module_globals, name))

    def __contains__(self, name) -> bool:
        return name in self.cells or dict.__contains__(self, name) or name in self.module_globals

    def get(self, name, default=None):
        try:
            return self[name]
        except KeyError:
            return default
