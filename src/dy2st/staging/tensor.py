"""The symbolic tensor: a placeholder that records ops while the converted function runs.

A ``Tensor`` stands for one NumPy array object. Its current contents are an SSA value; an in-place
update (``t[i] = v``, ``t += 1``) rebinds the tensor to a new value, so every Python name that
refers to the same array object sees the update, exactly as with NumPy arrays. The builder logs each
update so control-flow staging can carry updates made inside branches and loops.

Views follow their base as NumPy views do. A view NumPy always makes (basic indexing, transposes,
reshapes that only split axes, broadcast_to, diagonal) is an *exact view*: it keeps its parent
tensor and a recipe (``ViewRecipe``), its contents are re-derived from the parent's current
contents whenever the parent was updated since, and an update of the view is written into the
parent. A result that may or may not share memory with an array (a reshape that merges axes, which
NumPy copies for some layouts; a cond or loop result that was a view on some path) records which
arrays it may share and their contents then (``_shares``): it may be read while they are unchanged,
and an update of either is refused with a clear error rather than risk a silent difference.
"""

from __future__ import annotations

from typing import Any, Protocol, cast

import numpy as np

from dy2st.errors import GraphBuildError, TensorValueError, UnsupportedOpError, build_error, user_location
from dy2st.ir.core import Value
from dy2st.ir.opcodes import (
    KIND_CODES,
    KIND_DTYPE_NAMES,
    NUMPY_SCALAR,
    ZERO_D_ARRAY,
    numpy_kind_code,
    numpy_kind_of_code,
)
from dy2st.ir.opdefs import UFUNC_OPS, get_op
from dy2st.ir.symbolic import Dim, SymExpr, is_data_dependent, may_match, size_needed, symbols_in
from dy2st.ir.types import PYTHON_TYPE_OF_DTYPE_KIND, TensorType
from dy2st.staging import dispatch
from dy2st.staging.builder import GraphBuilder, current_builder
from dy2st.staging.handlers import (
    ASSIGNED_ATTRIBUTES,
    ATTRIBUTE_SETTERS,
    CREATION_HANDLERS,
    FALLBACKS,
    INDEXING,
    METHOD_HANDLERS,
    PROPERTY_HANDLERS,
)
from dy2st.staging.sequence_operands import with_sequence_rules

PYTHON_SCALARS = (bool, int, float, complex)


class ViewRecipe(Protocol):
    """How an exact view's contents follow its parent's (see the module docstring)."""

    def derive(self, parent: Tensor) -> Tensor:
        """The view of the parent's current contents (emits the view op again)."""
        ...

    def write_back(self, parent: Tensor, new: Tensor, what: str) -> Tensor:
        """The parent's new contents once the view holds ``new``; raises for read-only views."""
        ...


class Tensor:
    """A symbolic NumPy array with a static shape and dtype.

    Supports Python operators, NumPy ufuncs (``__array_ufunc__``), NumPy functions
    (``__array_function__``), the usual ndarray methods and properties, indexing, and in-place
    updates. Anything that needs a concrete value (``bool(t)``, ``int(t)``, ``np.asarray(t)``)
    raises ``TensorValueError`` naming the user's line.
    """

    __slots__ = (
        "_own",
        "_builder",
        "_parent",
        "_recipe",
        "_derived_from",
        "_shares",
        "_scalar",
        "_guard",
        "_kind_flag",
        "__weakref__",
    )
    __array_priority__ = 1000  # make NumPy defer binary operators to us
    # The type on each path, for a value whose shape depends on which branch of a tensor ``if``
    # ran (runtime/control_flow/path_shaped.py); None for every other tensor.
    _alternatives: tuple[TensorType, ...] | None = None

    def __init__(
        self,
        value: Value,
        builder: GraphBuilder,
        shares: tuple[tuple[Tensor, Value], ...] = (),
        scalar: bool = False,
    ):
        self._own = value
        # True where eager NumPy would hold an immutable NumPy scalar (a 0-d op result or an
        # np.generic argument): in-place operators then rebind the name instead of updating.
        self._scalar = scalar
        self._builder = builder
        # An exact view: the tensor it was taken from, and how to take it again.
        self._parent: Tensor | None = None
        self._recipe: ViewRecipe | None = None
        self._derived_from: Value | None = None  # the parent's contents ``_own`` was derived from
        # Arrays this value may share memory with, and their contents when it was made.
        self._shares = shares
        # A run-time check that every use must emit first (a variable a tensor loop may never
        # have assigned: runtime/control_flow/assigned.py); None for almost every tensor.
        self._guard: Any = None
        # For a 0-d value whose kind (0-d array, NumPy scalar or Python number) depends on the
        # path a tensor ``if`` or loop took: an int8 tensor holding its kind code on that path
        # (``ir.opcodes.KIND_CODES``); None for every other tensor.
        self._kind_flag: Any = None

    # --- contents ---------------------------------------------------------------------------
    @property
    def _value(self) -> Value:
        """The SSA value of the array's current contents (a view's follow its parent's)."""
        if self._parent is not None:
            self._follow_parent()
        return self._own

    @_value.setter
    def _value(self, value: Value) -> None:
        assert self._parent is None, "an exact view's contents follow its parent's"
        self._own = value

    def _follow_parent(self) -> None:
        parent, recipe = self._parent, self._recipe
        assert parent is not None and recipe is not None
        parent_value = parent._value
        if parent_value is not self._derived_from or not self._builder.can_see(self._own):
            derived = recipe.derive(parent)._own
            if not _keeps_type(self._builder, derived, self._own):  # the parent was reshaped in place (``x.shape = s``)
                raise GraphBuildError(
                    f"a view of an array whose shape was assigned after the view was taken (it was "
                    f"{self._own.type}, taken again it would be {derived.type})",
                    user_location(4),
                    "take the view after assigning .shape, or rebind the array: y = y.reshape(...)",
                )
            self._own = derived
            self._derived_from = parent_value

    def _make_view_of(self, parent: Tensor, recipe: ViewRecipe) -> None:
        """Make this op result an exact view of ``parent`` (it was just computed from it)."""
        self._parent, self._recipe = parent, recipe
        self._derived_from = parent._value
        self._shares = ()

    def _root(self) -> Tensor:
        """The array object an exact view was (eventually) taken from; itself for others."""
        tensor = self
        while tensor._parent is not None:
            tensor = tensor._parent
        return tensor

    def _shared_arrays(self) -> tuple[tuple[Tensor, Value], ...]:
        """Every array this tensor may share memory with, with its current contents: its root
        (itself, for an array that is no view) and what that root may share in turn."""
        shares: dict[tuple[int, int], tuple[Tensor, Value]] = {}
        tensor: Tensor | None = self
        while tensor is not None:
            shares.update(((id(a), id(c)), (a, c)) for a, c in tensor._shares)
            if tensor._parent is None:
                shares[id(tensor), id(tensor._own)] = (tensor, tensor._own)
            tensor = tensor._parent
        return tuple(shares.values())

    def _aliases(self) -> tuple[tuple[Tensor, Value], ...]:
        """The other arrays this tensor may share memory with (none for an array that is no view)."""
        return tuple(pair for pair in self._shared_arrays() if pair[0] is not self)

    # --- properties known statically -----------------------------------------------------
    @property
    def type(self) -> TensorType:
        return self._own.type  # a view's type never changes when its contents are derived again

    @property
    def shape(self) -> tuple[Dim, ...]:
        return self._own.type.shape

    @property
    def dtype(self) -> np.dtype:
        return self._own.type.exact_dtype  # '>f8' for a big-endian array, as ndarray.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> Dim:
        return self._own.type.size

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> Dim:
        return self._own.type.nbytes

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        if self._tracing and not isinstance(self.shape[0], int):
            return self._builder.decide(self._value, "len", user_location(2))  # x[mask] while tracing
        return int(self.shape[0])  # a symbolic size raises SymbolicSizeNeeded (``len`` is staged)

    def __format__(self, spec: str) -> str:
        """A placeholder for the value formatted with ``spec`` when the graph runs.

        ``f"{t:.2f}"`` and ``"{}".format(t)`` call this while the graph is built; ``print`` of a
        string holding placeholders prints the formatted values at every run (``convert_print``).
        """
        return self._builder.format_placeholder(self, spec)

    def __repr__(self) -> str:
        return f"<dy2st.Tensor {self.type} (symbolic)>"

    # --- what a symbolic tensor cannot be ------------------------------------------------
    def __hash__(self) -> int:
        """Refused, so that a dict lookup or set membership never answers for the stand-in
        (``TABLE.get(lr, 1.0)`` would silently miss): an ndarray is unhashable in NumPy too, and
        a NumPy scalar or Python number hashes by a value only known when the graph runs. dy2st
        keys its own tables by ``id``."""
        if self.type.shape or not (self._scalar or self.type.weak):
            raise TypeError("unhashable type: 'numpy.ndarray'")
        raise self._concrete("a dict key or set member", "look the value up outside the function, or use np.where")

    def _concrete(self, what: str, note: str) -> TensorValueError:
        error = TensorValueError(
            f"the tensor {self.type} is used as {what}, but its value is only known when the graph runs",
            user_location(3),
            note,
        )
        # Which graph inputs it was computed from: a Python number argument among them is then
        # passed as a constant in the next build (``StaticFunction`` with number inputs).
        error.needed = (self._value, self._builder.graph.body)
        return error

    @property
    def _tracing(self) -> bool:
        """Is this tensor being traced (``dy2st.trace``): does its value exist now?"""
        return self._builder.concrete is not None

    def _decided(self, kind: str) -> Any:
        """The Python value of this traced tensor, a decision the graph checks when it runs."""
        return self._builder.decide(self._value, kind, user_location(3))

    def __bool__(self) -> bool:
        if self._tracing:
            return self._decided("bool")
        raise self._concrete(
            "a Python bool",
            "use it as the condition of an if/while/assert/and/or/not that dy2st converts, or np.where",
        )

    def __int__(self) -> int:
        if self._tracing:
            return self._decided("int")
        raise self._concrete("a Python int", "keep it a tensor, or pass a Python int argument instead")

    def __float__(self) -> float:
        if self._tracing:
            return self._decided("float")
        raise self._concrete("a Python float", "keep it a tensor, or pass a Python float argument instead")

    def __complex__(self) -> complex:
        if self._tracing:
            return self._decided("complex")
        raise self._concrete("a Python complex", "keep it a tensor")

    def __index__(self) -> int:
        if self._tracing:
            return self._decided("index")
        raise self._concrete("a Python index", "index with the tensor itself (t[i]) or use a Python int")

    def __iter__(self):
        if self._tracing and self.shape and isinstance(self.shape[0], int):
            return iter([self[i] for i in range(self.shape[0])])  # rows, unrolled as eager code takes them
        raise self._concrete(
            "a Python iterable",
            "iterate over a tensor only as the iterable of a 'for' loop in a converted function",
        )

    def __array__(self, dtype=None, copy=None):
        error = self._concrete(
            "a concrete NumPy array",
            "this NumPy call has no symbolic form; see docs/numpy-support.md for the supported surface",
        )
        error.array_protocol = True
        raise error

    def item(self, *args):
        """``t.item()``: a Python number read when the graph runs (NumPy's own method)."""
        if self._tracing and not args:
            return self._decided("item")
        return FALLBACKS["method"]("item", self, args, {})

    def tolist(self):
        """``t.tolist()``: nested lists of Python numbers read when the graph runs; the shape must
        be static, since the lists' lengths are Python values of the graph."""
        if any(not isinstance(d, int) for d in self.shape):
            raise size_needed(symbols_in(tuple(self.shape)), f"the lengths of {self.type}.tolist()")
        return FALLBACKS["method"]("tolist", self, (), {})

    # --- NumPy protocols -----------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return dispatch.call_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return dispatch.call_function(func, args, kwargs)

    def __getattr__(self, name: str):
        handler = METHOD_HANDLERS.get(name)
        if handler is not None:
            return lambda *args, **kwargs: self._call_method(handler, name, args, kwargs)
        handler = PROPERTY_HANDLERS.get(name)
        if handler is not None:
            return handler(self)
        if name.startswith("__"):
            raise AttributeError(name)
        if FALLBACKS["is_method"](name):  # the generic layer calls NumPy's method when the graph runs
            return lambda *args, **kwargs: FALLBACKS["method"](name, self, args, kwargs)
        raise UnsupportedOpError(f"ndarray attribute '{name}' is not supported on symbolic tensors", user_location(2))

    def _call_method(self, handler, name: str, args: tuple, kwargs: dict) -> Any:
        """A method's precise handler; where it refuses an option, NumPy's own method called when
        the graph runs (the generic layer), if that can be staged."""
        try:
            return handler(self, *args, **kwargs)
        except GraphBuildError as refused:
            if not FALLBACKS["is_method"](name):
                raise
            return dispatch.generic_or_raise(refused, "method", name, self, args, kwargs)

    # --- indexing and in-place updates ---------------------------------------------------
    def __getitem__(self, index):
        return INDEXING["read"](self, index)

    def __setitem__(self, index, value) -> None:
        if self._scalar:
            raise GraphBuildError(
                f"'numpy.{self.dtype.name}' object does not support item assignment (a 0-d result of "
                "a NumPy operation is an immutable NumPy scalar)",
                user_location(2),
            )
        self._assign(INDEXING["write"](self, index, value), "subscript assignment")

    def _assign(self, new: Tensor, what: str) -> None:
        """Rebind this array object to new contents (an in-place update)."""
        self._check_fresh()
        if not _same_shape(new, self):
            raise GraphBuildError(f"{what} would change the array from {self.type} to {new.type}", user_location(3))
        parent, recipe = self._parent, self._recipe
        if parent is not None and recipe is not None:
            # Through a view: the parent takes the update, and the view shows it.
            parent._assign(recipe.write_back(parent, new, what), what)
            self._own, self._derived_from = new._value, parent._value
            return
        rotated = self._builder.rotated_arrays.get(id(self))
        if rotated is not None and rotated.tensor is self:
            # One of several arrays, chosen when the graph runs: that one takes the update.
            self._builder.log_mutation(self, self._own)
            self._own = new._value
            rotated.updated(self)
            return
        swapped = self._swapped()
        if swapped is not None:
            raise GraphBuildError(
                f"{what} writes into an array a loop swapped: {swapped}; here it is carried as a value of "
                "its own (by a later tensor loop or branch), so dy2st cannot tell which array the update goes into",
                user_location(3),
                "copy it after the swapping loop (a = a.copy()), or make the update in that loop",
            )
        if self._shares:
            raise GraphBuildError(
                f"{what} writes into an array that may share memory with another one (NumPy makes "
                "a view or a copy depending on the layout, or a branch or loop chose between a view "
                "and another array); dy2st cannot tell which arrays the update would change",
                user_location(3),
                "take a copy first (v = a[...].copy()) or update the base array directly",
            )
        self._builder.log_mutation(self, self._own)
        self._own = new._value

    def _inplace(self, opname: str, other) -> Tensor:
        return self._inplace_result(opname, apply(opname, self, other))

    def _inplace_unary(self, opname: str) -> Tensor:
        """``x **= 2`` where NumPy runs it as ``np.square(x, out=x)``."""
        return self._inplace_result(opname, apply(opname, self))

    def _inplace_result(self, opname: str, result: Tensor) -> Tensor:
        if self._scalar:
            return result  # NumPy scalars are immutable: `s += 1` rebinds s
        if not np.can_cast(result.dtype, self.dtype, casting="same_kind"):
            message = (
                f"in-place {opname}: cannot cast the result {result.dtype} to the array's dtype "
                f"{self.dtype} with casting rule 'same_kind' (NumPy raises here too)"
            )
            raise build_error(TypeError(message), message, user_location(2))  # NumPy's class is a TypeError
        if result.dtype != self.dtype:
            result = result.astype(self.dtype)  # the ndarray method, staged by its handler
        if not _same_shape(result, self):
            raise GraphBuildError(
                f"in-place {opname}: the result {result.type} does not fit the array {self.type} "
                "(NumPy cannot broadcast the output either)",
                user_location(2),
            )
        self._assign(result, f"in-place {opname}")
        return self

    def _swapped(self) -> str | None:
        """What the loop that swapped this array says about it (``GraphBuilder.rotated_arrays``),
        when it is a variable of that loop's cycle or may share memory with one of its arrays."""
        rotated = self._builder.rotated_arrays
        if not rotated:
            return None
        entry = rotated.get(id(self))
        if entry is not None and entry.tensor is self:
            return entry.what
        shared = {id(array) for array, _ in self._shares}
        for tensor, _, _, _, what in rotated.values():
            if id(tensor) in shared:  # a loop's copy of the variable
                return what
        for _, _, named, _, what in rotated.values():
            if any(id(array) in shared for array in named):
                return what
        return None

    def _check_fresh(self) -> None:
        """Refuse to read a value that may share memory with an array updated since it was made:
        whether it sees the update depends on a memory layout dy2st does not know."""
        tensor: Tensor | None = self
        while tensor is not None:
            for array, contents in tensor._shares:
                swapped = tensor._swapped() if array._own is not contents else None
                if swapped is not None:
                    raise GraphBuildError(
                        f"{swapped}, and one of those arrays changed since in a way this variable does not "
                        "follow (an update through another name, or in a later tensor loop that does not swap "
                        "them again), so dy2st cannot tell whether this read sees the change",
                        user_location(3),
                        "update the arrays through the swapped variables only, or copy the variable after the "
                        "swapping loop (a = a.copy())",
                    )
                if array._own is not contents:
                    raise GraphBuildError(
                        "this array may share memory with an array that was updated in place after "
                        "it was made (NumPy makes a view or a copy depending on the layout, or a "
                        "branch or loop chose between a view and another array), so dy2st cannot "
                        "tell whether it sees the update",
                        user_location(3),
                        "take a copy (v = a[...].copy()) before updating the base array, or index "
                        "the base array again after the update",
                    )
            tensor = tensor._parent


def as_value(builder: GraphBuilder, operand: Any, path_shaped_ok: bool = False) -> Value:
    """The SSA value of an operand: a Tensor's current value, or a new constant.

    A value whose shape depends on the path a tensor ``if`` took is refused unless the caller
    checked that the use cannot observe its shape (``path_shaped_ok``).
    """
    if isinstance(operand, Tensor):
        if operand._alternatives is not None and not path_shaped_ok:
            raise operand.shape_observed("used where its shape matters")
        if operand._builder is not builder:
            raise GraphBuildError(
                "a tensor from another graph (or from a finished trace) is used here; tensors "
                "cannot escape the converted function",
                user_location(3),
            )
        operand._check_fresh()
        if operand._guard is not None:
            operand._guard.check(builder)
        return operand._value
    if isinstance(operand, (PYTHON_SCALARS, np.ndarray, np.generic)):
        return builder.const(operand, user_location(3))
    if isinstance(operand, SymExpr):
        return builder.size_value(operand, user_location(3))
    if isinstance(operand, (list, tuple)):
        # NumPy makes an array of a sequence operand (np.asarray, which stacks the tensors it
        # holds) and promotes it as an array: `x_f32 * [1.0, 2.0]` is float64.
        return as_value(builder, CREATION_HANDLERS[np.asarray](operand))
    if getattr(type(operand), "unbound_variable", False):
        raise operand.error()  # ``x + y`` with y unbound (control_flow.Undefined): name y
    raise UnsupportedOpError(
        f"an operand of type {type(operand).__name__} cannot be used in a tensor operation",
        user_location(3),
    )


def find_builder(operands) -> GraphBuilder:
    for o in operands:
        if isinstance(o, Tensor):
            return o._builder
    builder = current_builder()
    if builder is None:
        raise RuntimeError("no graph is being built")
    return builder


def _keeps_type(builder: GraphBuilder, derived: Value, before: Value) -> bool:
    """Is a view taken again of the type it had? Its data-dependent sizes (``x[:k]``) are made
    afresh by each derivation but are the same sizes: the derived value takes the view's own."""
    if not any(is_data_dependent(d) for d in (*derived.type.shape, *before.type.shape)):
        return derived.type == before.type
    if derived.type.dtype != before.type.dtype or not may_match(derived.type.shape, before.type.shape):
        return False
    builder.retype(derived, before.type.shape)
    return True


def _same_shape(new: Tensor, target: Tensor) -> bool:
    """Does ``new`` have ``target``'s shape, to be written into it? Where they differ only in
    data-dependent sizes, the write checks them when it runs, and ``new`` takes the target's."""
    if not any(is_data_dependent(d) for d in (*new.shape, *target.shape)):
        return new.shape == target.shape
    if not may_match(new.shape, target.shape) or new._alternatives is not None:
        return False
    new._builder.retype(new._own, target.shape)
    return True


def apply(name: str, *operands: Any, **attrs: Any) -> Any:
    """Emit op ``name`` on the operands; return a Tensor (or a tuple for several results)."""
    builder = find_builder(operands)
    path_shaped = next((o for o in operands if isinstance(o, Tensor) and o._alternatives is not None), None)
    values = [as_value(builder, o, path_shaped is not None) for o in operands]
    per_path = None
    if path_shaped is not None:  # the result types on each path, or None if they all agree
        per_path = path_shaped.result_alternatives(name, operands, values, attrs)
    op = builder.emit(name, values, attrs, loc=user_location(2))
    if path_shaped is not None and per_path is not None:
        results = [path_shaped.with_path_types(v, types) for v, types in zip(op.results, per_path)]
        return results[0] if len(results) == 1 else tuple(results)
    shares: tuple[tuple[Tensor, Value], ...] = ()
    if get_op(name).view and operands and isinstance(operands[0], Tensor):
        # It may share the operand's memory; handlers of views NumPy always makes turn the
        # result into an exact view (``_make_view_of``).
        shares = operands[0]._shared_arrays()
    results = [Tensor(v, builder, shares, scalar=not v.type.shape) for v in op.results]
    return results[0] if len(results) == 1 else tuple(results)


def _operator_op(ufunc: np.ufunc) -> str:
    """The opcode registered for the ufunc behind a Python operator."""
    try:
        return UFUNC_OPS[ufunc]
    except KeyError:
        raise KeyError(f"no op is registered for np.{ufunc.__name__}") from None


def apply_ufunc(ufunc: np.ufunc, *operands: Any, **attrs: Any) -> Any:
    """Emit the op registered for ``ufunc`` (``np.logical_and``, ...) on the operands."""
    return apply(_operator_op(ufunc), *operands, **attrs)


def _inherit_kind(result: Any, one: Any, other: Any, ufunc: np.ufunc, reflected: bool = False) -> Any:
    """A Python operator (``ufunc``) between a value whose kind a path decided
    (``Tensor._kind_flag``) and a Python number gives what eager code gets on that path: a Python
    number from a Python number (of the result's Python type: ``best > 1.0`` of a Python float is
    a Python bool), a NumPy scalar from a NumPy scalar or a 0-d array, of the dtype NumPy gives
    that path's own dtype with a Python number (a float32 scalar times 1.5 stays float32)."""
    source, other = (other, one) if getattr(one, "_kind_flag", None) is None else (one, other)
    if not isinstance(source, Tensor) or source._kind_flag is None or not isinstance(result, Tensor):
        return result
    if not _plain_python_number(other):
        _refuse_path_dependent_dtype(result, source, other)
        return result
    if result.type.shape:
        return result
    other_type = PYTHON_TYPE_OF_DTYPE_KIND[other.dtype.kind] if isinstance(other, Tensor) else type(other)
    # ``x ** 2`` stages np.square: a unary ufunc, the exponent is no operand of it.
    others = (other_type,) if ufunc.nin == 2 else ()
    return _with_path_kind(result, source._kind_flag, ufunc, others, reflected)


# ``_with_path_kind``'s (flag + 6) >> 3 is 1 for the Python kinds only while every code is below 10.
assert max(KIND_CODES.values()) + 8 - KIND_CODES[bool] < 16


def _with_path_kind(result: Tensor, flag: Tensor, ufunc: np.ufunc, others: tuple[type, ...], reflected: bool) -> Tensor:
    """``result`` of ``ufunc`` applied to a value of the path kind ``flag`` (and Python numbers of
    the types ``others``), with the kind eager code's result has on that path."""
    python_code = KIND_CODES[PYTHON_TYPE_OF_DTYPE_KIND[result.dtype.kind]]
    if not result._builder.narrow_kinds:
        # Codes 0 to 5 only: 0-d array 0 and NumPy scalar 1 give a NumPy scalar (1), Python
        # numbers (2 and up) the code of the result's Python type: 1 + (code - 1) * is_python.
        # is_python is (flag + 6) >> 3, 0 for codes 0 and 1 and 1 for codes 2 to 5: int8
        # arithmetic, which runs as NumPy's scalar operators; a bool times an int8 (flag >= 2)
        # takes NumPy's ufunc, 25 times slower (crc32's converted call spent 0.5 us there).
        shifted = apply_ufunc(np.add, flag, np.int8(8 - KIND_CODES[bool]))
        is_python = apply_ufunc(np.right_shift, shifted, np.int8(3))
        step = apply_ufunc(np.multiply, is_python, np.int8(python_code - 1))
        result._kind_flag = apply_ufunc(np.add, step, np.int8(1))
        return result
    table = _inherited_kinds(ufunc, others, reflected, python_code)
    return _rounded_to_path_dtype(result, _looked_up(flag, table))


def _refuse_path_dependent_dtype(result: Tensor, source: Tensor, other: Any) -> None:
    """``source`` holds a NumPy scalar carried in a wider slot on some path (``s = 0.0``, then
    ``s = max(s, x[0])`` of float32 ``x``); with an array or NumPy scalar ``other`` narrower than
    that slot, eager code's dtype (float32 on every path there) is not the slot's: refused, where
    the graph would return float64."""
    if not source._builder.narrow_kinds:
        return
    other_dtype = getattr(other, "dtype", None)
    if other_dtype is None or result.dtype == other_dtype or result.dtype != source.dtype:
        return
    raise GraphBuildError(
        f"a value that is a Python number or a NumPy {other_dtype} scalar depending on the path taken "
        f"meets a {other_dtype} operand here: dy2st holds it as {source.dtype} and cannot give "
        f"eager NumPy's {other_dtype} result",
        user_location(3),
        f"start the variable as a {other_dtype} value (for example np.{other_dtype}(0)) instead of a Python number",
    )


def _unary_keeping_kind(ufunc: np.ufunc):
    """``-x``, ``+x``, ``abs(x)``, ``~x``: of a value whose kind a path decided, the result has
    that path's kind (``-s`` of a Python float ``s`` is a Python float)."""

    def operator(self: Tensor) -> Any:
        result = apply(_operator_op(ufunc), self)
        if self._kind_flag is None or not isinstance(result, Tensor) or result.type.shape:
            return result
        return _with_path_kind(result, self._kind_flag, ufunc, (), reflected=False)

    return operator


# The kind codes a flag may hold once dtypes have codes of their own (``numpy_kind_code``).
_KIND_CODE_RANGE = range(-64, 64)


def _inherited_kinds(ufunc: np.ufunc, others: tuple[type, ...], reflected: bool, python_code: int) -> dict[int, int]:
    """For each kind code a path may hold, the kind of ``ufunc`` applied to a value of that kind
    and Python numbers of the types ``others`` (codes no value has are left out)."""
    table = {KIND_CODES[ZERO_D_ARRAY]: KIND_CODES[NUMPY_SCALAR], KIND_CODES[NUMPY_SCALAR]: KIND_CODES[NUMPY_SCALAR]}
    for code in _KIND_CODE_RANGE:
        if code >= KIND_CODES[bool]:
            table[code] = python_code
        elif (of_dtype := numpy_kind_of_code(code)) is not None:
            dtype = np.dtype(of_dtype[0])
            operands: tuple[Any, ...] = (*others, dtype) if reflected else (dtype, *others)
            try:
                resolved = ufunc.resolve_dtypes((*operands, *([None] * ufunc.nout)))
            except (TypeError, ValueError):
                continue  # no loop for it: the operator raised, so the path cannot hold it here
            table[code] = numpy_kind_code(resolved[-1].name, True)
    return table


def _looked_up(flag: Tensor, table: dict[int, int]) -> Tensor:
    """``table[flag]`` as a chain of ``where`` over runs of codes, tested in order, in which the
    table gives one code, or adds one offset to the code (the identity; an array's code to its
    scalar's): a few int8 ops, which the compiled tier compiles as it compiles the rest."""
    runs: list[list[Any]] = []  # [last code, offset or None, code or None]
    for code in sorted(table):
        offset, target = table[code] - code, table[code]
        if runs and (runs[-1][1] == offset or runs[-1][2] == target):
            run = runs[-1]
            run[:] = [code, offset if run[1] == offset else None, target if run[2] == target else None]
        else:
            runs.append([code, offset, target])
    looked_up: Any = None
    for last, offset, target in reversed(runs):
        if target is not None:
            value: Any = np.int8(target)
        else:
            value = apply_ufunc(np.add, flag, np.int8(offset)) if offset else flag
        if looked_up is None:
            looked_up = value
        else:
            looked_up = np.where(apply_ufunc(np.less_equal, flag, np.int8(last)), value, looked_up)
    if not isinstance(looked_up, Tensor):
        return Tensor(flag._builder.const(looked_up), flag._builder, scalar=True)
    looked_up._scalar = True  # a code, as the flag is (np.where gives a 0-d array)
    return looked_up


def _rounded_to_path_dtype(result: Tensor, kind_flag: Tensor) -> Tensor:
    """``result``, computed in its slot's dtype, rounded to the narrower dtype of the NumPy scalar
    eager code has on the path taken (``kind_flag``): float32 arithmetic done in float64 and then
    rounded is float32's own (53 bits hold 2 * 24 + 2), and integers wrap as the narrow type does."""
    rounded = result
    for name in KIND_DTYPE_NAMES:
        narrow = np.dtype(name)
        if narrow.kind not in _ROUNDED_KINDS[result.dtype.kind] or narrow.itemsize >= result.dtype.itemsize:
            continue
        on_path = apply_ufunc(np.equal, kind_flag, np.int8(numpy_kind_code(name, True)))
        rounded = cast(Tensor, np.where(on_path, result.astype(narrow).astype(result.dtype), rounded))
    rounded._scalar = result._scalar  # the operator's result, whatever np.where gives
    rounded._kind_flag = kind_flag
    return rounded


_ROUNDED_KINDS = {"f": "f", "c": "c", "i": "iu", "u": "iu", "b": ""}


def _plain_python_number(value: Any) -> bool:
    if isinstance(value, Tensor):
        return value.type.weak and value._kind_flag is None
    return isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic)


def _binary(ufunc: np.ufunc):
    def forward(self, other):
        return _inherit_kind(apply(_operator_op(ufunc), self, other), self, other, ufunc)

    def reflected(self, other):
        return _inherit_kind(apply(_operator_op(ufunc), other, self), self, other, ufunc, reflected=True)

    def inplace(self, other):
        return self._inplace(_operator_op(ufunc), other)

    return (
        with_sequence_rules(ufunc, forward),
        with_sequence_rules(ufunc, reflected, reflected=True),
        with_sequence_rules(ufunc, inplace),
    )


# Python operators are NumPy's ufuncs, as on ndarray: ``a + b`` stages the op registered for np.add.
for _stem, _ufunc in {
    "__add__": np.add,
    "__sub__": np.subtract,
    "__mul__": np.multiply,
    "__truediv__": np.true_divide,
    "__floordiv__": np.floor_divide,
    "__mod__": np.remainder,
    "__pow__": np.power,
    "__matmul__": np.matmul,
    "__and__": np.bitwise_and,
    "__or__": np.bitwise_or,
    "__xor__": np.bitwise_xor,
    "__lshift__": np.left_shift,
    "__rshift__": np.right_shift,
}.items():
    _f, _r, _i = _binary(_ufunc)
    setattr(Tensor, _stem, _f)
    setattr(Tensor, f"__r{_stem[2:]}", _r)
    setattr(Tensor, f"__i{_stem[2:]}", _i)


def _power_ufunc(base: Tensor, exponent: Any) -> np.ufunc:
    """The ufunc ``base ** exponent`` runs on an array: NumPy's ``ndarray.__pow__`` takes a
    shortcut for some Python-number exponents (``np.square`` for the int 2, ``np.reciprocal`` for
    the int -1, ``np.sqrt`` for the float 0.5), which rounds complex values otherwise than
    ``np.power`` (``z ** 2`` is ``z * z``). NumPy scalars (their own scalar power) and Python
    numbers keep ``np.power``."""
    if base._scalar or base.type.weak or base.dtype.kind not in "fc":
        return np.power
    if type(exponent) is int:
        return {2: np.square, -1: np.reciprocal}.get(exponent, np.power)
    if type(exponent) is float and exponent == 0.5:
        return np.sqrt
    return np.power


def _power(self: Tensor, exponent: Any) -> Any:
    ufunc = _power_ufunc(self, exponent)
    if ufunc is np.power:
        return _POWER_FORWARD(self, exponent)
    return _inherit_kind(apply(_operator_op(ufunc), self), self, exponent, ufunc)


def _inplace_power(self: Tensor, exponent: Any) -> Any:
    ufunc = _power_ufunc(self, exponent)
    if ufunc is np.power:
        return _POWER_INPLACE(self, exponent)
    return self._inplace_unary(_operator_op(ufunc))


_POWER_FORWARD, _POWER_INPLACE = getattr(Tensor, "__pow__"), getattr(Tensor, "__ipow__")  # noqa: B009
setattr(Tensor, "__pow__", _power)  # noqa: B010
setattr(Tensor, "__ipow__", _inplace_power)  # noqa: B010

for _dunder, _ufunc in {
    "__lt__": np.less,
    "__le__": np.less_equal,
    "__gt__": np.greater,
    "__ge__": np.greater_equal,
    "__eq__": np.equal,
    "__ne__": np.not_equal,
}.items():
    setattr(Tensor, _dunder, _binary(_ufunc)[0])

for _dunder, _ufunc in {
    "__neg__": np.negative,
    "__pos__": np.positive,
    "__abs__": np.absolute,
    "__invert__": np.invert,
}.items():
    setattr(Tensor, _dunder, _unary_keeping_kind(_ufunc))

# divmod(a, b) is np.divmod: a (quotient, remainder) pair of results. No in-place form.
for _dunder, _method in zip(("__divmod__", "__rdivmod__"), _binary(np.divmod)[:2]):
    setattr(Tensor, _dunder, _method)


def _assign_attribute(tensor: Tensor, name: str, value: Any) -> None:
    """``tensor.name = value`` in user code: what the op family registered, or a refusal."""
    assign = ATTRIBUTE_SETTERS.get(name)
    if assign is None:
        raise UnsupportedOpError(
            f"assigning the ndarray attribute '{name}' is not supported on symbolic tensors", user_location(3)
        )
    assign(tensor, value)


def _assignable(name: str) -> property:
    """A data descriptor for an ndarray attribute whose assignment dy2st intercepts: reading is
    unchanged (a static property of Tensor, or a property handler through ``__getattr__``)."""
    existing = Tensor.__dict__.get(name)
    if isinstance(existing, property):
        getter = existing.fget
    else:

        def getter(tensor: Tensor) -> Any:
            return tensor.__getattr__(name)

    def assign(tensor: Tensor, value: Any) -> None:
        _assign_attribute(tensor, name, value)

    return property(getter, assign, doc=f"ndarray.{name}")


for _name in ASSIGNED_ATTRIBUTES:
    setattr(Tensor, _name, _assignable(_name))


def apply_effect(name: str, *operands: Any, **attrs: Any) -> None:
    """Emit a side-effecting op without results (print, assert)."""
    builder = find_builder(operands)
    values = [as_value(builder, o) for o in operands]
    builder.emit(name, values, attrs, loc=user_location(2))
