"""What control-flow staging needs to know about the values flowing through branches and loops.

A variable can hold a symbolic ``Tensor``, a concrete NumPy array or scalar, a Python number, the
``Undefined`` sentinel, or any other Python object. Only the first three kinds (and Python numbers,
which become weakly typed 0-d values) can be outputs of a ``cond`` or carried by a ``while_loop``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from dy2st.errors import SourceLocation
from dy2st.frontend.reserved_names import RETURN_VALUE_STEM
from dy2st.ir.core import Block, Value
from dy2st.ir.opcodes import KIND_CODES, NUMPY_SCALAR, ZERO_D_ARRAY, numpy_kind_code
from dy2st.ir.symbolic import SymbolicSizeNeeded, SymExpr, is_data_dependent
from dy2st.ir.types import PYTHON_TYPE_OF_DTYPE_KIND, TensorType, type_of_array, type_of_python_scalar
from dy2st.ops.python_numbers import AS_PYTHON_NUMBER, PYTHON_CONVERSION
from dy2st.runtime.control_flow.references import seen_elsewhere
from dy2st.runtime.control_flow.undefined import Undefined
from dy2st.runtime.pytree import constant_key, flatten
from dy2st.staging.builder import GraphBuilder
from dy2st.staging.handlers import RUNTIME_QUERIES
from dy2st.staging.tensor import Tensor, apply

PYTHON_NUMBERS = (bool, int, float, complex)


def as_python_number(builder: GraphBuilder, value: Value) -> Value:
    """``value`` as a weakly typed Python number (unchanged if it is one already)."""
    if value.type.weak:
        return value
    return builder.emit(AS_PYTHON_NUMBER, [value]).result


class PythonNumber(Tensor):
    """A 0-d tensor standing for a Python number (a loop counter, a number chosen by a tensor if).

    Python operators between Python numbers give Python numbers (``i + 1`` is an int, weakly
    typed), so it keeps promoting like one: ``x_f32 * (i + 1)`` stays f32, as in eager code, and
    the generated code runs them as Python's own operators (unbounded ints, ``ZeroDivisionError``).
    NumPy functions (``np.add(i, 1)``) give NumPy scalars, as they do eagerly.
    """

    __slots__ = ()


def _is_weak(operand: Any) -> bool:
    return is_python_number(operand) or (isinstance(operand, Tensor) and operand.type.weak)


# Python's arithmetic on bools is int arithmetic (``True + True == 2``, ``-True == -1``) where
# NumPy's stays bool: bools become ints first. ``& | ^`` of two bools are bools in both.
_INT_ON_BOOLS = frozenset("add sub mul truediv floordiv mod pow divmod lshift rshift neg pos abs invert".split())


def _staged_builtin(value: Any, builtin: Any) -> Any:
    """``builtin(value)`` (``int``, ``float``) of a Python number, staged when it is a tensor."""
    if not isinstance(value, Tensor):
        return builtin(value)
    result = apply(PYTHON_CONVERSION, value, builtin=builtin)
    return PythonNumber(result._value, result._builder, scalar=True)


def _python_operands(stem: str, reflected: bool, operands: list[Any]) -> list[Any]:
    """The operands as Python's operator sees them: bools as ints in arithmetic, and an int base
    with a negative int exponent as a float (Python's ``int ** -n`` is ``float(int) ** -n``, so the
    graph knows at build time that the result is a float)."""
    if stem in _INT_ON_BOOLS:
        operands = [_staged_builtin(o, int) if _dtype_kind(o) == "b" else o for o in operands]
    if stem == "pow":
        base, exponent = (1, 0) if reflected else (0, 1)
        negative = isinstance(operands[exponent], int) and operands[exponent] < 0
        if negative and _dtype_kind(operands[base]) in "iu":
            operands[base] = _staged_builtin(operands[base], float)
    return operands


def _dtype_kind(operand: Any) -> str:
    if isinstance(operand, Tensor):
        return operand.dtype.kind
    return "b" if isinstance(operand, bool) else type_of_python_scalar(operand).dtype.kind


def _python_number_operator(name: str, stem: str, reflected: bool):
    tensor_operator = getattr(Tensor, name)

    def operator(self, *others):
        # A symbolic size (``t + len(x)``) is the Python int it stands for.
        others = tuple(size_number(self._builder, o) if isinstance(o, SymExpr) else o for o in others)
        if not all(_is_weak(o) for o in others):
            return tensor_operator(self, *others)  # it meets an array: NumPy's operator
        result = tensor_operator(*_python_operands(stem, reflected, [self, *others]))
        if isinstance(result, tuple):  # divmod
            return tuple(python_number(r) for r in result)
        if not isinstance(result, Tensor) or result.shape:
            return result
        number = python_number(result)
        number._kind_flag = result._kind_flag  # a kind a path decided (Tensor._inherit_kind)
        return number

    operator.__name__ = name
    return operator


_BINARY = "add sub mul truediv floordiv mod pow lshift rshift and or xor".split()
for _stem in _BINARY:
    for _name, _reflected in ((_stem, False), (f"r{_stem}", True), (f"i{_stem}", False)):
        setattr(PythonNumber, f"__{_name}__", _python_number_operator(f"__{_name}__", _stem, _reflected))
for _stem in "neg pos abs invert lt le gt ge eq ne".split():
    setattr(PythonNumber, f"__{_stem}__", _python_number_operator(f"__{_stem}__", _stem, False))
for _name, _reflected in (("__divmod__", False), ("__rdivmod__", True)):
    setattr(PythonNumber, _name, _python_number_operator(_name, "divmod", _reflected))
PythonNumber.__hash__ = Tensor.__hash__  # type: ignore[method-assign]  # defining __eq__ dropped it


def size_number(builder: GraphBuilder, size: SymExpr) -> PythonNumber:
    """A symbolic size as the Python int it is when the graph runs."""
    return PythonNumber(builder.size_value(size), builder, scalar=True)


def python_number(tensor: Tensor) -> PythonNumber:
    """``tensor`` (0-d) as a ``PythonNumber``: weakly typed in the graph, a Python number at run time."""
    value = as_python_number(tensor._builder, tensor._value)
    return PythonNumber(value, tensor._builder, scalar=True)


# The generic layer (ops/generic.py) asks for it: a NumPy function that returns a Python number
# (np.array_equal's bool) gives one in the graph too.
RUNTIME_QUERIES["python_number"] = python_number


def wrap_result(builder: GraphBuilder, value: Value) -> Tensor:
    """The tensor for a cond or loop result: a ``PythonNumber`` if the result is weakly typed."""
    if value.type.weak:
        return PythonNumber(value, builder, scalar=True)
    return Tensor(value, builder, scalar=not value.type.shape)


def zero_d_kind(values: list[Any]) -> bool | None:
    """The ``_scalar`` of a 0-d cond or loop result that is each of ``values`` on some path: True
    when every path holds a NumPy scalar or number, False when every path holds a 0-d array,
    None when that depends on the path (the executor then returns whatever the path gave)."""
    kinds = set()
    for value in values:
        if isinstance(value, Tensor):
            kinds.add(value._scalar)
        elif isinstance(value, np.ndarray):
            kinds.add(False)
        elif not isinstance(value, Undefined):
            kinds.add(True)
    return kinds.pop() if len(kinds) == 1 else None


def path_kind(value: Any) -> Any:
    """What a 0-d value is in eager code on this path: a kind code (``KIND_CODES``: 0-d array,
    NumPy scalar, or a Python bool, int, float or complex), the int8 tensor computing it where an earlier ``if`` or loop
    decided it (``Tensor._kind_flag``), or None when unknown (not 0-d, or not recorded)."""
    if isinstance(value, Tensor):
        if value.type.shape:
            return None
        if value._kind_flag is not None:
            return value._kind_flag
        if isinstance(value, PythonNumber):
            return KIND_CODES[PYTHON_TYPE_OF_DTYPE_KIND[value.dtype.kind]]
        return {True: KIND_CODES[NUMPY_SCALAR], False: KIND_CODES[ZERO_D_ARRAY]}.get(value._scalar)
    if isinstance(value, np.generic):  # before Python numbers: np.float64 is a float
        return KIND_CODES[NUMPY_SCALAR]
    if is_python_number(value):
        return KIND_CODES[type(value)]
    if isinstance(value, np.ndarray) and not value.shape:
        return KIND_CODES[ZERO_D_ARRAY]
    return None


def widened_keeping_kind(value: Tensor, dtype: np.dtype) -> Tensor:
    """``value`` (0-d) cast to the wider ``dtype`` a branch or loop slot holds, still returned as
    what eager code has there: ``max(s, x[0])`` with ``s = 0.0`` picks float32 ``x[0]`` itself."""
    wide = value.astype(dtype)
    if value.type.shape or value.type.weak:
        return wide
    if value._kind_flag is not None:
        wide._kind_flag = value._kind_flag
    elif value._scalar is not None:
        code = np.int8(numpy_kind_code(value.dtype.name, value._scalar))
        wide._kind_flag = Tensor(value._builder.const(code), value._builder, scalar=True)
        value._builder.narrow_kinds = True
    return wide


def kinds_differ(kinds: list[Any]) -> bool:
    """Do these paths' kinds (``path_kind``) need a kind computed when the graph runs?"""
    if any(kind is None for kind in kinds):
        return False
    return any(isinstance(kind, Tensor) for kind in kinds) or len(set(kinds)) > 1


KIND_TYPE = TensorType((), np.dtype(np.int8))


def returned(value: Any) -> Any:
    """``return value`` lowered to ``retval = _dy2st.returned(value)`` (an early return): the
    value is read here, so an array among it that may share memory with an array updated since
    it was made is refused here, as reading it in any other way is (``Tensor._check_fresh``)."""
    leaves: list[Any] = []
    flatten(value, leaves, lambda leaf: isinstance(leaf, Tensor))
    for leaf in leaves:
        if isinstance(leaf, Tensor):
            leaf._check_fresh()
    return value


def zero_like(value: Any) -> Any:
    """A zero standing in for ``value`` on a path that never uses it, of its exact type: a Python
    number for a Python number or a tensor standing for one (weakly typed), else an array."""
    if is_python_number(value):
        return value.__class__(0)
    # A value whose shape depends on an inner if's path stands in with its common (union) type.
    type = value.type if isinstance(value, Tensor) else static_type(value)
    assert type is not None, f"{value!r} has no static type"
    if type.weak:
        return {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}[type.dtype.kind]
    # A data-dependent size stands in as 0: joined with the real value, it stays data-dependent.
    zeros = np.zeros(tuple(0 if is_data_dependent(d) else d for d in type.shape), type.dtype)
    # A NumPy scalar's stand-in is a NumPy scalar, so the path does not decide the result's kind.
    return zeros[()] if isinstance(value, Tensor) and value._scalar and not type.shape else zeros


def is_python_number(value: Any) -> bool:
    return isinstance(value, PYTHON_NUMBERS)


def is_concrete_array(value: Any) -> bool:
    return isinstance(value, (np.ndarray, np.generic))


def static_type(value: Any) -> TensorType | None:
    """The graph type ``value`` would have as a cond output or loop-carried value, else None."""
    if isinstance(value, Tensor):
        if value._alternatives is not None:  # its shape depends on a tensor if's path
            raise value.shape_observed("merged by another tensor 'if' or carried by a tensor loop")
        return value.type
    if isinstance(value, SymExpr):
        raise SymbolicSizeNeeded(value.symbols, "a size merged by a tensor 'if' or carried by a tensor loop")
    if is_concrete_array(value):
        return type_of_array(np.asarray(value))
    if is_python_number(value):
        return type_of_python_scalar(value)
    return None


def describe(value: Any) -> str:
    """How an error message names a value: its type for arrays, its value for Python objects."""
    if isinstance(value, Tensor):
        return str(value.type)
    if is_concrete_array(value):
        return f"the NumPy value {static_type(value)}"
    if is_python_number(value) or isinstance(value, (str, bytes)):
        return f"the Python {type(value).__name__} {value!r}"
    if value is None:
        return "None"
    if isinstance(value, Undefined):
        return "not defined"
    if isinstance(value, (tuple, list, dict)):
        return f"a {type(value).__name__} of {len(value)} values"
    return f"a Python {type(value).__name__}"


def variable_name(label: str) -> str:
    """How an error message names a variable: quoted, except the lowered return value."""
    base = label.split("[")[0]
    if base == RETURN_VALUE_STEM or base.startswith(RETURN_VALUE_STEM + "_"):
        return "the return value" + label[len(base) :]
    if not base.isidentifier():
        return label  # a description such as "the result" of dy2st.cond
    return f"'{label}'"


def is_return_value(label: str) -> bool:
    """Is ``label`` the variable the early-return converter returns through?"""
    return variable_name(label).startswith("the return value")


def same_python_value(a: Any, b: Any) -> bool:
    """Identity, or equality of same-typed immutable constants (NumPy values never compare here;
    floats compare by their bits)."""
    if a is b:
        return True
    if type(a) is not type(b) or is_concrete_array(a) or isinstance(a, Tensor):
        return False
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same_python_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_python_value(a[k], b[k]) for k in a)
    if isinstance(a, (float, complex)):
        return constant_key(a) == constant_key(b)  # by the bits: 0.0 is not -0.0 (1 / -0.0 is -inf)
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 (an object whose == fails is not equal)
        return False


def value_in_block(builder: GraphBuilder, value: Any, type: TensorType, block: Block) -> Value:
    """The SSA value of ``value`` as a ``type`` inside ``block`` (constants are emitted there).

    ``value`` is an SSA value already, a Tensor, or a Python number / NumPy constant.
    """
    with builder.in_block(block):
        if isinstance(value, Tensor):
            value = value._value
        if isinstance(value, Value):
            # A strong value yielded where a Python number is carried becomes a number again.
            return as_python_number(builder, value) if type.weak and not value.type.weak else value
        return constant(builder, value, type)


def constant(builder: GraphBuilder, value: Any, type: TensorType, loc: SourceLocation | None = None) -> Value:
    """A constant holding the Python number or NumPy value ``value`` with exactly ``type``."""
    if type.weak and is_python_number(value):
        return builder.const(value, loc)
    array = np.asarray(value)
    if array.dtype != type.dtype:
        array = array.astype(type.dtype)
    if not isinstance(value, np.ndarray) and array.ndim == 0:
        return builder.const(array[()], loc)  # a number stays a NumPy scalar, as in eager code
    return builder.const(array, loc)


def weak_promotion_keeps(type: TensorType, number: Any) -> bool:
    """Does NumPy 2 keep ``type``'s dtype when combining it with the Python number ``number``?

    ``f32`` with ``0.5`` stays ``f32``; ``i64`` with ``0.5`` becomes ``f64`` (not compatible).
    """
    if isinstance(number, bool):
        return type.dtype == np.bool_
    if type.weak and type.dtype.kind == "i" and isinstance(number, int):
        return True  # both Python ints: unbounded when the graph runs, whatever their size
    try:
        if np.result_type(type.dtype, number) != type.dtype:
            return False
        np.asarray(number, dtype=type.dtype)  # out-of-range integers raise (NumPy 2)
    except (OverflowError, TypeError, ValueError):
        return False
    return True


def defined_within(value: Value, block: Block) -> bool:
    """Is ``value`` defined inside ``block`` (directly, or in a region nested in it)?"""
    owner = value.owner
    current = owner if isinstance(owner, Block) else getattr(owner, "parent", None)
    while current is not None:
        if current is block:
            return True
        region = current.parent
        op = region.parent if region is not None else None
        current = op.parent if op is not None else None
    return False


def record_shared_memory(
    result: Tensor, sources: list[tuple[Any, Block | None]], merged: dict[int, Tensor], owners: set
) -> None:
    """Give a cond or loop ``result`` the arrays it may share memory with, or be.

    ``sources`` are the objects ``result`` stands for on some path (a branch's value, a loop
    variable's value before the loop or at the end of the body), each with the block it was made
    in (None: before the op). ``result`` may be that very object, or share memory with the arrays
    a view shares: it records them, so that reading ``result`` after one of them is updated, or
    updating it, is refused instead of silently differing from the path eager code took.
    ``merged`` maps objects made inside the blocks to the results standing for them afterwards
    (two outputs that were one object); objects made inside a block and not handed out are
    unreachable afterwards and drop out, and so does an object from before the op that only the
    variables ``owners`` (the one merged) can reach.
    Call it once every result of the op is bound, so the recorded contents are the final ones.
    """
    if result._scalar or result.type.weak:
        return  # an immutable NumPy scalar or Python number: nothing can update it in place
    shares: dict[tuple[int, int], tuple[Tensor, Value]] = {(id(a), id(c)): (a, c) for a, c in result._shares}
    for obj, block in sources:
        if not isinstance(obj, Tensor):
            continue
        # The arrays obj may share memory with, with their contents when obj was made (an
        # update since then makes the result unreadable too), then obj itself, as it is now.
        for array, contents in [*obj._aliases(), (obj, obj._own)]:
            target = merged.get(id(array))
            if target is not None:
                contents = target._own
            else:
                made_inside = block is not None and defined_within(array._own, block)
                if made_inside or (array is obj and (obj._parent is not None or not seen_elsewhere(obj, owners))):
                    continue  # an exact view itself is followed through the arrays it shares
                target = array
            if target is not result:
                shares[id(target), id(contents)] = (target, contents)
    result._shares = tuple(shares.values())


@contextlib.contextmanager
def isolated_mutations(builder: GraphBuilder) -> Iterator[list]:
    """Record the in-place updates made inside the ``with``, hiding them from enclosing records.

    A branch or loop body reports its updates to enclosing branches and loops itself, once, as
    updates of the values they had before it; the raw entries name values inside its regions.
    """
    parent = builder.mutation_logs[-1] if builder.mutation_logs else None
    mark = len(parent) if parent is not None else 0
    with builder.recording_mutations() as log:
        yield log
    if parent is not None:
        del parent[mark:]
