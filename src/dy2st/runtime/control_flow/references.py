"""Which of the user's variables can see an array object while a function is staged.

Eager NumPy updates array *objects*; a static graph updates values. The two agree as long as an
update reaches every name that refers to the object. Control-flow staging needs one question
answered to stay exact without refusing ordinary code: besides the variable being carried or
merged, can anything else in the user's program reach this array object? If not, an in-place
update of it in a loop's first iteration, or the object's identity after a tensor ``if``, cannot be
observed, and the variable can be treated as holding a plain value.

Only converted user code and the arguments can hold staged tensors, so the answer comes from the
user's frames on the stack (converted functions, their loop bodies and branches, and converted
callers), scanning each variable's value, containers in it, and views of the object.
"""

from __future__ import annotations

import types
import weakref
from typing import Any

from dy2st.errors import user_frames
from dy2st.staging.builder import GraphBuilder
from dy2st.staging.handlers import RUNTIME_QUERIES
from dy2st.staging.tensor import Tensor

_CONTAINER_DEPTH = 4  # how deeply tuples, lists and dicts in a variable are searched

# A variable, told apart by the frame that defines it (a closure's free variable is its
# enclosing function's variable) and its name.
Variable = tuple[int, str]


def reaches(value: Any, target: Tensor, depth: int = _CONTAINER_DEPTH) -> bool:
    """Is ``value`` the array ``target``, a view of it, or a container holding one?"""
    if isinstance(value, Tensor):
        return value is target or any(array is target for array, _ in value._shared_arrays())
    if depth and isinstance(value, (tuple, list, set, frozenset)):
        return any(reaches(item, target, depth - 1) for item in value)
    if depth and isinstance(value, dict):
        return any(reaches(item, target, depth - 1) for item in value.values())
    return False


def variable_of(frame: types.FrameType, name: str) -> Variable:
    """The variable ``name`` denotes in ``frame``: a free variable belongs to the enclosing
    function's frame further out on the stack (converted loop bodies and branches are closures
    called from the function that defines them)."""
    if name in frame.f_code.co_freevars:
        inner = frame.f_code.co_qualname
        outer = frame.f_back
        while outer is not None:
            code = outer.f_code
            if name in code.co_cellvars and inner.startswith(code.co_qualname + ".<locals>."):
                return id(outer), name
            outer = outer.f_back
    return id(frame), name


def variables_reaching(target: Tensor) -> set[Variable]:
    """The user's variables (in every frame of user code on the stack) that reach ``target``."""
    found: set[Variable] = set()
    for frame in user_frames(2):
        for name, value in frame.f_locals.items():
            if reaches(value, target):
                found.add(variable_of(frame, name))
    return found


def is_caller_visible(builder: GraphBuilder, array: Tensor) -> bool:
    """Is ``array`` (or the array it views) an argument or a global/closure array of the graph?"""
    return any(id(shared) in builder.caller_arrays for shared, _ in array._shared_arrays())


def seen_elsewhere(array: Tensor, owners: set[Variable]) -> bool:
    """Can anything but the variables ``owners`` reach the array object ``array``: the caller (an
    argument or captured array), another variable, a container or a view? A loop's stand-in for
    a carried variable is, in the first iteration, the array from before the loop: that array's
    answer counts too."""
    if is_caller_visible(array._builder, array) or variables_reaching(array) - owners:
        return True
    stands_for = stood_in_for(array)
    return stands_for is not None and seen_elsewhere(stands_for, owners)


def add_stand_in(stand_in: Tensor, array: Tensor) -> None:
    """Record that ``stand_in`` is ``array`` in the first iteration of a tensor loop."""
    stand_in._builder.stand_ins[id(stand_in)] = (weakref.ref(stand_in), array)


def stood_in_for(tensor: Tensor) -> Tensor | None:
    """The array ``tensor`` stands in for (``add_stand_in``), if any."""
    entry = tensor._builder.stand_ins.get(id(tensor))
    return entry[1] if entry is not None and entry[0]() is tensor else None


def variable_in_user_code(name: str) -> Variable | None:
    """The variable ``name`` denotes in the innermost frame of user code (the converted code
    calling into dy2st now), or None when there is no such frame."""
    frame = next(user_frames(2), None)
    return variable_of(frame, name) if frame is not None else None


def other_references(array: Tensor) -> str | None:
    """What besides one variable of the user's code can reach the array object ``array`` (the
    caller, for an argument or a global; other variables, containers or views), or None. The op
    families ask it through ``RUNTIME_QUERIES`` (``x.shape = s`` reshapes only such an array)."""
    if is_caller_visible(array._builder, array):
        return "the caller (it is an argument, or a global or closure array)"
    names = sorted(name for _, name in variables_reaching(array))
    if len(names) > 1:
        return "the variables " + ", ".join(f"'{name}'" for name in names) + " (other names, containers or views)"
    return None


RUNTIME_QUERIES["other_references"] = other_references
