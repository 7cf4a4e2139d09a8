"""Indexing: ``t[index]`` and functional ``t[index] = v``.

An index is split into a static *template* (ints, slices, None, Ellipsis, concrete arrays) and
tensor operands (integer tensors, in the template as ``TENSOR_SLOT``). The result shape comes from
NumPy itself: the template is applied to a zero-strided dummy of the operand's shape, with each
tensor slot replaced by a dummy integer array of the tensor's shape. Basic indexing of a dummy
is a view, so this costs nothing; advanced indexing allocates one byte per result element.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from dy2st.errors import DifferentiationError, GraphBuildError, UnsupportedOpError, build_error, user_location
from dy2st.ir.attribute_keys import UnhashableAttribute, attr_key, attributes_key
from dy2st.ir.core import Op, Value
from dy2st.ir.emit import Emitter
from dy2st.ir.opdefs import OpDef, get_op, infer_types, register
from dy2st.ir.symbolic import (
    DataDependentSize,
    Dim,
    SymExpr,
    broadcast_shapes,
    data_dependent_size,
    dims_equal,
    has_symbolic,
    is_one,
    oblivious,
    size_holds,
    size_needed,
)
from dy2st.ir.types import TensorType
from dy2st.ops.adjoint import Cotangents, zeros
from dy2st.ops.arguments import normalize_axes, reject_unsupported
from dy2st.ops.join import array_from_nested, contains_tensor
from dy2st.staging.handlers import CREATION_HANDLERS, INDEXING, UFUNC_METHOD_HANDLERS, handles, method
from dy2st.staging.literal_values import literal_value
from dy2st.staging.tensor import Tensor, apply
from dy2st.staging.views import OpView, make_view

SliceSizes = Callable[[int, Dim], Dim]
"""The size of the k-th slice with a tensor bound of an index, given its axis's size."""


class _TensorSlot:
    """Marks where a tensor operand goes in an index template."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "%"

    def __reduce__(self):
        return (_TensorSlot, ())


TENSOR_SLOT = _TensorSlot()


def _check_index_tensor(item: Tensor) -> None:
    if item.dtype.kind not in "iub":
        raise GraphBuildError(f"only integer tensors can be used as indices, not {item.dtype}", user_location())


def _slice_bound_slots(item: slice, tensors: list[Tensor]) -> slice:
    """A slice whose bounds may be tensors (``x[:n]``, ``data[ptr[i]:ptr[i + 1]]``), with each
    tensor bound a ``TENSOR_SLOT`` and the tensor appended to ``tensors``: the slice's length is
    then known only when it runs (a data-dependent size)."""
    bounds = []
    for bound in (item.start, item.stop, item.step):
        if isinstance(bound, Tensor):
            if bound.ndim or bound.dtype.kind not in "iu":
                raise GraphBuildError(
                    f"slice indices must be integers or None or have an __index__ method, not the tensor {bound.type}",
                    user_location(),
                )
            tensors.append(bound)
            bounds.append(TENSOR_SLOT)
        else:
            bounds.append(bound)
    return slice(*bounds)


def _slots_of(item: Any) -> int:
    """How many tensors an index item stands for (a slice may have one per bound)."""
    if item is TENSOR_SLOT:
        return 1
    if isinstance(item, slice):
        return sum(bound is TENSOR_SLOT for bound in (item.start, item.stop, item.step))
    return 0


def _has_slice_slots(template: tuple) -> bool:
    return any(isinstance(item, slice) and _slots_of(item) for item in template)


def split_index(index) -> tuple[tuple, list]:
    """(template, tensor operands) for a user index. Concrete index arrays, boolean ones included,
    stay in the template: NumPy applies them to the stand-in of the shape rule, which checks a
    mask's length and gives its count."""
    items = index if isinstance(index, tuple) else (index,)
    template: list[Any] = []
    tensors: list[Tensor] = []
    for item in items:
        if isinstance(item, list) and contains_tensor(item):
            item = array_from_nested("indexing", item)  # x[[i, j]] with tensors i, j: one index tensor
        item = _known_index_item(item)
        if isinstance(item, Tensor):
            _check_index_tensor(item)
            template.append(TENSOR_SLOT)
            tensors.append(item)
        elif isinstance(item, slice):
            template.append(_slice_bound_slots(item, tensors))
        elif isinstance(item, list):
            template.append(np.asarray(item))
        else:
            template.append(item)
    return tuple(template), tensors


def _known_index_item(item: Any) -> Any:
    """An index array made from constants alone (``np.array([True, False, True])``,
    ``np.arange(5) % 2 == 0``) as its value, known while the graph is built (a mask's count is
    then static); any other item unchanged."""
    if isinstance(item, Tensor) and item.ndim:
        known = literal_value(item._value)
        return item if known is None else known
    return item


def _fill(template: tuple, tensors) -> tuple:
    """The index itself: ``template`` with each ``TENSOR_SLOT`` (in slices too) the next tensor."""
    it = iter(tensors)
    return tuple(_filled(item, it) for item in template)


def _filled(item: Any, tensors: Iterator[Any]) -> Any:
    if item is TENSOR_SLOT:
        return next(tensors)
    if isinstance(item, slice) and _slots_of(item):
        return slice(*(next(tensors) if b is TENSOR_SLOT else b for b in (item.start, item.stop, item.step)))
    return item


def is_basic(template: tuple, tensor_types: list[TensorType]) -> bool:
    """True when NumPy returns a view: no arrays in the index except 0-d integer ones."""
    arrays = iter(tensor_types)
    for item in template:
        if isinstance(item, slice):
            for _ in range(_slots_of(item)):
                next(arrays)  # 0-d integer bounds: the slice is basic
        elif item is TENSOR_SLOT:
            array = next(arrays)
            if array.ndim or array.dtype == np.bool_:
                return False
        elif isinstance(item, np.ndarray) and item.ndim:
            return False
    return True


def indexed_shape(
    shape: tuple[Dim, ...],
    template: tuple,
    tensor_types: list[TensorType],
    mask_counts: Sequence[Dim] | None = None,
    slice_sizes: SliceSizes | None = None,
) -> tuple[Dim, ...]:
    """The shape of ``x[index]``; an index out of bounds (``x[8]`` of a 6-element ``x``) gives the
    shape it would have in bounds: the op raises IndexError when it runs (``in_bounds``), so a
    branch eager code never takes may hold it. Other invalid indices raise IndexError now.

    A boolean tensor in the index selects a number of elements known only when the op runs: its
    ``mask_counts`` entry (a fresh data-dependent size where none is given). So does a slice with
    a tensor bound: ``slice_sizes(k, axis size)`` for the k-th such slice (else a fresh size)."""
    if (
        has_symbolic(shape)
        or any(has_symbolic(t.shape) or t.dtype == np.bool_ for t in tensor_types)
        or _has_slice_slots(template)
    ):
        return symbolic_indexed_shape(
            shape, template, tensor_types, check_bounds=False, mask_counts=mask_counts, slice_sizes=slice_sizes
        )
    dummy = np.broadcast_to(np.empty((), np.uint8), shape)  # type: ignore[arg-type]  # static here
    tensors = [np.zeros(t.shape, np.intp) for t in tensor_types]
    try:
        return dummy[_fill(template, tensors)].shape
    except IndexError as e:
        try:
            return dummy[_fill(_in_bounds_template(template), tensors)].shape
        except IndexError:
            # An integer index into an empty axis (the rows of an empty array in a loop that
            # runs zero times) has no in-bounds value: the shape is the axis dropped.
            if 0 in shape and is_basic(template, tensor_types):
                return _shape_without_indexed_axes(shape, template)
            raise IndexError(str(e)) from None


def _shape_without_indexed_axes(shape: tuple[Any, ...], template: tuple) -> tuple[Any, ...]:
    """The shape of a basic index (ints, 0-d tensors, slices, None, Ellipsis), worked out axis by
    axis: integers drop their axis, slices keep what they select, None adds a unit axis."""
    consuming = sum(1 for item in template if item is not None and item is not Ellipsis)
    expanded: list[Any] = []
    for item in template:
        if item is Ellipsis:
            expanded.extend([slice(None)] * (len(shape) - consuming))
        else:
            expanded.append(item)
    expanded.extend([slice(None)] * (len(shape) - sum(1 for item in expanded if item is not None)))
    result: list[int] = []
    axes = iter(shape)
    for item in expanded:
        if item is None:
            result.append(1)
        elif isinstance(item, slice):
            result.append(len(range(*item.indices(next(axes)))))
        else:
            next(axes)  # an integer or a 0-d tensor index drops the axis
    return tuple(result)


def symbolic_indexed_shape(
    shape: tuple[Dim, ...],
    template: tuple,
    tensor_types: list[TensorType],
    check_bounds: bool = True,
    mask_counts: Sequence[Dim] | None = None,
    slice_sizes: SliceSizes | None = None,
) -> tuple[Dim, ...]:
    """The shape of ``x[index]`` worked out by NumPy's rules, for shapes with symbolic sizes.

    Slices give their length (with a guard where it depends on a symbolic size, see
    ``slice_length``); an integer or 0-d index drops its axis; ``None`` adds a unit axis. Index
    arrays (tensors or concrete arrays of at least one dimension) make the index advanced: their
    broadcast shape replaces the axes they index where they are adjacent, else it comes first.
    With ``check_bounds``, a static integer out of bounds raises NumPy's IndexError. A boolean
    mask indexes as many axes as it has, giving one axis of its count of true elements.
    """
    expanded = _expanded_index(shape, template, tensor_types)
    advanced = any(
        item is _MASK or ((s := _index_array_shape(item, item_shape)) is not None and len(s))
        for item, item_shape in expanded
    )
    counts = iter(mask_counts or ())
    sliced = 0  # slices with a tensor bound so far
    parts: list[tuple[Dim, ...] | None] = []  # None marks where advanced-index dimensions go
    advanced_shapes: list[tuple[Dim, ...]] = []
    advanced_at: list[int] = []
    axis = 0
    for item, item_shape in expanded:
        if item is None:
            parts.append((1,))
            continue
        if item is _MASK:
            _check_mask_shape(item_shape, shape[axis : axis + len(item_shape)], axis)
            advanced_at.append(len(parts))
            count = next(counts, None)
            advanced_shapes.append((data_dependent_size() if count is None else count,))
            parts.append(None)
            axis += len(item_shape)
            continue
        size = shape[axis]
        if isinstance(item, slice) and _slots_of(item):
            parts.append((data_dependent_size() if slice_sizes is None else slice_sizes(sliced, size),))
            sliced += 1
        elif isinstance(item, slice):
            parts.append((slice_length(item, size),))
        else:
            index_shape = _integer_index_shape(item, item_shape, size, axis, check_bounds)
            if advanced:
                advanced_at.append(len(parts))
                advanced_shapes.append(index_shape)
                parts.append(None)
        axis += 1
    if not advanced:
        return tuple(d for part in parts if part is not None for d in part)
    return _place_advanced(parts, advanced_at, broadcast_shapes(*advanced_shapes))


def _integer_index_shape(item: Any, item_shape: Any, size: Dim, axis: int, check_bounds: bool) -> tuple[Dim, ...]:
    """The shape an integer index or index array contributes (``()`` for an integer), after
    NumPy's bounds check of what is known now (``check_bounds``)."""
    index_shape = _index_array_shape(item, item_shape)
    if index_shape is None:  # a Python or NumPy integer
        if check_bounds and _out_of_bounds(int(item), size):
            raise IndexError(f"index {int(item)} is out of bounds for axis {axis} with size {size}")
        return ()
    if check_bounds and isinstance(item, np.ndarray) and item.size:
        for bad in (int(item.max()), int(item.min())):
            if _out_of_bounds(bad, size):
                raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {size}")
    return index_shape


def _out_of_bounds(index: int, size: Dim) -> bool:
    """Is ``index`` out of bounds for an axis of ``size``: decided (and guarded) for an argument's
    size; for a data-dependent size only where it is for every size (else the op checks it)."""
    if index >= 0:
        return size_holds(size, operator.le, index)
    return size_holds(size, operator.lt, -index)


def _place_advanced(
    parts: list[tuple[Dim, ...] | None], advanced_at: list[int], broadcast: tuple[Dim, ...]
) -> tuple[Dim, ...]:
    """NumPy's placement of the advanced-index dimensions: where the index arrays are, when they
    are adjacent, else first."""
    adjacent = advanced_at == list(range(advanced_at[0], advanced_at[0] + len(advanced_at)))
    basic = [part for part in parts if part is not None]
    if adjacent:
        before = [d for part in parts[: advanced_at[0]] for d in part or ()]
        after = [d for part in parts[advanced_at[-1] + 1 :] for d in part or ()]
        return (*before, *broadcast, *after)
    return (*broadcast, *(d for part in basic for d in part))


_MASK = object()  # a boolean tensor in an expanded index (``_expanded_index``)


def _expanded_index(shape: tuple[Dim, ...], template: tuple, tensor_types: list[TensorType]) -> list[tuple[Any, Any]]:
    """The index as (item, shape of its tensor or None), one item per axis (a boolean mask, as
    ``_MASK``, one per axis it indexes) plus the ``None``s: ``Ellipsis`` and the missing trailing
    axes become full slices."""
    types = iter(tensor_types)
    items: list[tuple[Any, Any]] = []
    for item in template:
        if item is TENSOR_SLOT:
            item_type = next(types)
            items.append((_MASK if item_type.dtype == np.bool_ else item, item_type.shape))
        else:
            for _ in range(_slots_of(item)):
                next(types)  # a slice's tensor bound
            items.append((item, None))
    consuming = sum(_axes_indexed(item, item_shape) for item, item_shape in items)
    if consuming > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, but {consuming} were indexed")
    expanded: list[tuple[Any, Any]] = []
    for item, item_shape in items:
        if item is Ellipsis:
            expanded.extend([(slice(None), None)] * (len(shape) - consuming))
        else:
            expanded.append((item, item_shape))
    expanded.extend([(slice(None), None)] * (len(shape) - sum(_axes_indexed(*entry) for entry in expanded)))
    return expanded


def _axes_indexed(item: Any, item_shape: Any) -> int:
    """How many axes of the array an index item consumes."""
    if item is None or item is Ellipsis:
        return 0
    return len(item_shape) if item is _MASK else 1


def _check_mask_shape(mask_shape: tuple[Dim, ...], axes: tuple[Dim, ...], first_axis: int) -> None:
    """NumPy's IndexError for a boolean index whose shape differs from the axes it indexes."""
    for k, (mask_size, size) in enumerate(zip(mask_shape, axes)):
        if not dims_equal(mask_size, size):
            raise IndexError(
                f"boolean index did not match indexed array along axis {first_axis + k}; size of axis is "
                f"{size} but size of corresponding boolean axis is {mask_size}"
            )


def _index_array_shape(item: Any, item_shape: Any) -> tuple[Dim, ...] | None:
    """The shape of an index array (a tensor's, or a concrete array's), None for other items."""
    if item_shape is not None:
        return item_shape
    return tuple(item.shape) if isinstance(item, np.ndarray) else None


def slice_length(item: slice, size: Dim) -> Dim:
    """``len(range(*item.indices(size)))`` for a slice of static bounds, when ``size`` may be
    symbolic: a decision about a symbolic size (is ``n0 >= 3`` for ``[:3]``) is guarded. Steps
    other than 1 and -1 on a symbolic size need the size (``SymbolicSizeNeeded``)."""
    if not isinstance(size, SymExpr):
        return len(range(*item.indices(size)))
    step = 1 if item.step is None else int(item.step)
    if step == 1:
        start = _clamped_bound(item.start, size, 0)
        stop = _clamped_bound(item.stop, size, size)
        return stop - start if stop >= start else 0
    if step == -1:
        # Bounds of a reversed slice lie in [-1, size - 1]: -1 is "before the first element".
        start = _clamped_bound(item.start, size, size - 1, low=-1, high=size - 1)
        stop = _clamped_bound(item.stop, size, -1, low=-1, high=size - 1)
        return start - stop if start >= stop else 0
    raise size_needed(size.symbols, f"a slice with step {step} of the size {size}")


def _clamped_bound(bound: Any, size: Dim, default: Dim, low: Dim = 0, high: Dim | None = None) -> Dim:
    """A slice bound as ``slice.indices`` normalises it: negative counts from the end, clamped."""
    if bound is None:
        return default
    value: Dim = int(bound)
    if value < 0:
        value = value + size
    high = size if high is None else high
    if value < low:
        return low
    if value > high:
        return high
    return value


def _in_bounds_template(template: tuple) -> tuple:
    """``template`` with every static integer index replaced by 0 (the result's shape does not
    depend on which element an integer index picks)."""
    return tuple(
        0
        if isinstance(item, (int, np.integer)) and not isinstance(item, bool)
        else np.zeros_like(item)
        if isinstance(item, np.ndarray) and item.dtype.kind in "iu"
        else item
        for item in template
    )


def _static_indices_in_bounds(types, template) -> bool:
    x, *index_types = types
    try:
        _check_static_indices(x.shape, template, index_types)
    except IndexError:
        return False
    return True


def _check_static_indices(shape: tuple[Dim, ...], template: tuple, index_types: list[TensorType]) -> None:
    """Raise NumPy's IndexError for the parts of an index known now: static integers out of
    bounds, boolean masks of the wrong shape (integer tensors are checked when the op runs)."""
    if has_symbolic(shape) or any(has_symbolic(t.shape) for t in index_types if t.dtype == np.bool_):
        probes = [t if t.dtype == np.bool_ else TensorType((), np.dtype(np.intp)) for t in index_types]
        with oblivious():  # what depends on data-dependent sizes is checked when the op runs
            symbolic_indexed_shape(shape, template, probes, mask_counts=[0] * len(probes))
        return
    arrays = [_static_probe(t) for t in index_types]
    np.broadcast_to(np.empty((), np.uint8), shape)[_fill(template, arrays)]  # type: ignore[arg-type]  # static


def _static_probe(index: TensorType) -> Any:
    """What an index tensor stands for in ``_check_static_indices``: a mask of its shape, or indices
    0, in bounds unless their axis is empty, where NumPy raises for any index but not for an empty
    index array (``x[idx[:1]]`` with both empty): of the tensor's shape where it is static."""
    if index.dtype == np.bool_:
        return np.zeros(index.shape, np.bool_)
    return np.zeros(index.shape, np.intp) if index.ndim and not has_symbolic(index.shape) else np.intp(0)


def _getitem_rule(types, template):
    x, *index_types = types
    return TensorType(indexed_shape(x.shape, template, index_types), x.dtype)


def _getitem_kernel(x, *index_arrays, template):
    return x[_fill(template, index_arrays)]


def _setitem_rule(types, template):
    x, value, *index_types = types
    try:
        _check_value_fits(x, value, index_types, template)
    except DataDependentSize:
        pass  # the sizes are known when the op runs, which checks them as NumPy does
    return x.strong()


def _check_value_fits(x: TensorType, value: TensorType, index_types: list[TensorType], template: tuple) -> None:
    """NumPy's error for a value that does not broadcast to the indexed part of ``x``."""
    target = indexed_shape(x.shape, template, index_types)
    # NumPy drops leading unit axes of the value first: x[0] = v works for v of shape (1, 1, n).
    value_shape = value.shape
    while len(value_shape) > len(target) and is_one(value_shape[0]):
        value_shape = value_shape[1:]
    try:
        if broadcast_shapes(value_shape, target) != target:
            raise ValueError
    except ValueError:
        raise ValueError(f"could not broadcast input array from shape {value.shape} into shape {target}") from None


def _setitem_region(types, template) -> TensorType | None:
    """The type of ``x[index]`` where the generated code's ``x[index]`` is a view of ``x``: only
    ints, slices, None and Ellipsis, with Python ints in the tensor slots that stand alone (a
    0-d integer *array* there is advanced indexing, a copy; as a slice bound it is fine)."""
    x, _value, *index_types = types
    slots = iter(index_types)
    for item in template:
        if item is TENSOR_SLOT:
            slot = next(slots)
            if not (slot.weak and slot.ndim == 0 and slot.dtype.kind in "iu"):
                return None
        elif isinstance(item, slice):
            for _ in range(_slots_of(item)):
                next(slots)
        elif isinstance(item, (bool, np.bool_)) or (isinstance(item, np.ndarray) and item.ndim):
            return None
    return infer_types(get_op("getitem"), [x, *index_types], {"template": template})  # type: ignore[return-value]


def _setitem_kernel(x, value, *index_arrays, template):
    out = x.copy(order="K")
    out[_fill(template, index_arrays)] = value
    return out


def _setitem_in_place(x, value, *index_arrays, template):
    """``x[index] = value`` in ``x``'s own buffer, as eager code runs it; the ``in-place-updates``
    pass chooses it where nothing reads the old ``x`` later. NumPy reads a ``value`` that overlaps
    ``x`` (``A[1:] = A[:-1]``) before writing it."""
    x[_fill(template, index_arrays)] = value
    return x


# --- adjoint rules (dy2st.autodiff) --------------------------------------------------------
INDEX_ADD = "index_add"
"""``x`` with ``value`` added at ``x[index]``, repeated indices adding up (``np.add.at``): the
cotangent of indexing."""


def _index_add_kernel(x, value, *index_arrays, template):
    out = x.copy(order="K")
    index = _fill(template, index_arrays)
    if all(item is None or item is Ellipsis or isinstance(item, (int, slice)) for item in index):
        out[index] += value  # basic indexing names each element once
    else:
        np.add.at(out, index, value)
    return out


def _getitem_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    (g,) = cts
    if g is None:
        return [None] * len(op.operands)
    x, *indices = op.operands
    template = op.attrs["template"]
    return [e.op(INDEX_ADD, zeros(e, x), g, *indices, template=template), *([None] * len(indices))]


def _index_add_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``x`` with ``value`` added at ``x[index]``: ``x``'s cotangent passes through, and each
    value's is the cotangent read where it was added (repeated places each read it)."""
    (g,) = cts
    if g is None:
        return [None] * len(op.operands)
    _x, _value, *indices = op.operands
    template = op.attrs["template"]
    kind = "getitem" if is_basic(template, [v.type for v in indices]) else "gather"
    return [g, e.op(kind, g, *indices, template=template), *([None] * len(indices))]


def _setitem_vjp(e: Emitter, op: Op, cts: Cotangents) -> Cotangents:
    """``x[index] = value``: the cotangent of ``x`` is zero where the value was written, and the
    value's is the cotangent read there (summed over broadcasting by the caller)."""
    (g,) = cts
    if g is None:
        return [None] * len(op.operands)
    x, _value, *indices = op.operands
    template = op.attrs["template"]
    dx = e.op("setitem", g, 0.0, *indices, template=template)
    dvalue = e.op("getitem", g, *indices, template=template)
    if _may_repeat(template, indices):
        dvalue = e.op("where", _last_writes(e, op, x, indices, dvalue.type), dvalue, 0.0)
    return [dx, dvalue, *([None] * len(indices))]


def _may_repeat(template: tuple, indices: Sequence[Value]) -> bool:
    """Can the index name one element twice (integer index arrays, concrete or tensors)?"""
    concrete = any(isinstance(item, np.ndarray) and item.ndim and item.dtype.kind in "iu" for item in template)
    return concrete or any(v.type.ndim and v.type.dtype.kind in "iu" for v in indices)


def _last_writes(e: Emitter, op: Op, x: Value, indices: Sequence[Value], written: TensorType) -> Value:
    """Which elements of the (broadcast) value of ``x[index] = value`` are the ones left in ``x``:
    where the index repeats an element, NumPy keeps one of the values written there, and only it
    has a gradient. Found by writing each value position's number the same way and reading back."""
    if has_symbolic(written.shape):
        raise DifferentiationError(
            "the gradient of an assignment through integer index arrays of a size known only at run time", op.loc
        )
    shape = tuple(int(n) for n in written.shape)
    positions = np.arange(math.prod(shape)).reshape(shape)
    owners = e.op("full", shape=tuple(x.type.shape), fill_value=-1, dtype=positions.dtype)
    owners = e.op("setitem", owners, positions, *indices, template=op.attrs["template"])
    return e.op("equal", e.op("getitem", owners, *indices, template=op.attrs["template"]), positions)


_INT64_MAX = np.iinfo(np.int64).max


def _onnx_getitem(w, op) -> list[str]:
    """Indexing by ints, slices with static bounds, ``None``, ``...`` and 0-d integer tensors
    (one ``Gather`` or ``Slice`` per axis, in order); one integer-array index with slices
    elsewhere is a ``Gather``. Other advanced indexing does not export."""
    x, *tensors = op.operands
    template = op.attrs["template"]
    slots = iter(tensors)
    name, axis, ndim = w.input(x), 0, x.type.ndim
    consumed = sum(1 for item in template if item is not None and item is not Ellipsis)
    for item in template:
        if item is Ellipsis:
            axis += ndim - consumed
        elif item is None:
            name = w.node("Unsqueeze", [name, w.constant(np.array([axis], np.int64))])[0]
            axis += 1
        elif isinstance(item, slice):
            if any(bound is TENSOR_SLOT for bound in (item.start, item.stop, item.step)):
                raise w.refuse("a slice with a tensor bound")
            step = 1 if item.step is None else int(item.step)
            start = item.start if item.start is not None else (0 if step > 0 else -1)
            stop = item.stop if item.stop is not None else (_INT64_MAX if step > 0 else -_INT64_MAX)
            bounds = [w.constant(np.array([v], np.int64)) for v in (start, stop, axis, step)]
            name = w.node("Slice", [name, *bounds])[0]
            axis += 1
        elif item is TENSOR_SLOT or isinstance(item, (int, np.integer, np.ndarray)):
            if item is TENSOR_SLOT:
                value = next(slots)
                index_ndim, kind = value.type.ndim, value.type.dtype.kind
                index = w.input(value, np.dtype(np.int64))
            else:
                array = np.asarray(item)
                index_ndim, kind = array.ndim, array.dtype.kind
                index = w.constant(array.astype(np.int64))
            if kind not in "iu" or (index_ndim and consumed > 1):
                raise w.refuse("advanced indexing other than one integer array")
            name = w.node("Gather", [name, index], axis=axis)[0]
            axis += index_ndim  # the index's axes replace the one it indexes
        else:
            raise w.refuse(f"an index of type {type(item).__name__}")
    return [name]


register(
    OpDef(
        INDEX_ADD,
        _setitem_rule,
        _index_add_kernel,
        returns_fresh=True,
        index_operands=2,
        vjp=_index_add_vjp,
        doc="x with value added at x[index] (np.add.at): the cotangent of indexing",
    )
)
register(
    OpDef(
        "getitem",
        _getitem_rule,
        _getitem_kernel,
        vjp=_getitem_vjp,
        onnx=_onnx_getitem,
        view=True,
        index_operands=1,
        in_bounds=_static_indices_in_bounds,
        doc="basic indexing (a view)",
    )
)
register(
    OpDef(
        "gather",
        _getitem_rule,
        _getitem_kernel,
        vjp=_getitem_vjp,
        onnx=_onnx_getitem,
        returns_fresh=True,
        index_operands=1,
        in_bounds=_static_indices_in_bounds,
        doc="advanced indexing (a copy)",
    )
)
register(
    OpDef(
        "setitem",
        _setitem_rule,
        _setitem_kernel,
        vjp=_setitem_vjp,
        returns_fresh=True,
        index_operands=2,
        in_bounds=lambda types, template: _static_indices_in_bounds([types[0], *types[2:]], template),
        broadcast_operands=(1,),
        updates_operand=0,
        in_place_kernel=_setitem_in_place,
        updated_region=_setitem_region,
        doc="x with x[index] = value, functionally",
    )
)


# --- copy_if_overlapping -------------------------------------------------------------------------
COPY_IF_OVERLAPPING = "copy_if_overlapping"
"""The op the ``in-place-updates`` pass puts before an update whose array has views read later:
the array itself, or a copy of it where the part the update writes shares memory with one of them."""


def _copy_if_overlapping_rule(types, template, indices):
    return types[0].strong()


def _copy_if_overlapping(x, *operands, template, indices):
    """``x``, or a copy of ``x`` when ``x[index]`` shares an element with one of the arrays after
    the ``indices`` index operands: an update of ``x[index]`` in ``x``'s buffer then leaves what
    they hold alone (``y_prev = forward[:, j - 1]`` while ``forward[:, j]`` is written)."""
    index = _fill(template, operands[:indices])
    if not any(item is Ellipsis for item in index):
        index = (*index, Ellipsis)  # a view even where the index picks one element
    region = x[index]
    return x.copy(order="K") if any(share_elements(other, region) for other in operands[indices:]) else x


def share_elements(a: Any, b: np.ndarray) -> bool:
    """Does the array ``a`` share an element with ``b`` (not just overlapping memory bounds:
    ``d[:, k]`` and ``d[:, k - 1]`` interleave)? Where NumPy cannot tell within a bounded
    effort, yes. A NumPy scalar shares nothing."""
    if not isinstance(a, np.ndarray):
        return False
    try:
        # NumPy's stubs admit only -1 and 0, but any bound on the effort is valid.
        return bool(np.shares_memory(a, b, max_work=10_000))  # type: ignore[arg-type]
    except np.exceptions.TooHardError:
        return True


register(
    OpDef(
        COPY_IF_OVERLAPPING,
        _copy_if_overlapping_rule,
        _copy_if_overlapping,
        view=True,
        doc="x, or a copy of x where x[index] shares memory with one of the other operands",
    )
)


def _refuse_out_of_bounds_where_it_always_runs(opname: str, tensor, template: tuple, index_tensors: list) -> None:
    """Static indices out of bounds raise NumPy's IndexError now in code that always runs (the
    function's top level); inside a tensor ``if`` or loop the op raises when it runs, as eager
    code does only on a path that reaches it (``indexed_shape``)."""
    builder = getattr(tensor, "_builder", None)
    if builder is None or builder.block is not builder.graph.body:
        return
    try:
        _check_static_indices(tensor.shape, template, [t.type for t in index_tensors])
    except IndexError as e:
        raise build_error(e, f"{opname}({tensor.type}): {e}", user_location()) from None


def getitem(tensor, index: Any):
    template, tensors = split_index(index)
    kind = "getitem" if is_basic(template, [t.type for t in tensors]) else "gather"
    _refuse_out_of_bounds_where_it_always_runs(kind, tensor, template, tensors)
    result = apply(kind, tensor, *tensors, template=template)
    _share_data_dependent_sizes(result, tensor, template, tensors)
    # x[0, 0] is a NumPy scalar (a copy), x[0, ...] a 0-d array (a view that += updates in place).
    result._scalar = result._scalar and Ellipsis not in template
    # NumPy makes a view for integer and NumPy-scalar indices, but indexing with a 0-d integer
    # *array* is advanced indexing: a copy (``x[np.array(1)]``).
    if kind == "getitem" and not result._scalar and all(t._scalar for t in _point_indices(template, tensors)):
        recipe = OpView("getitem", {"template": template}, tuple(t._value for t in tensors), _index_write_back)
        make_view(result, tensor, recipe)
    else:
        result._shares = ()  # a copy, or a NumPy scalar: it shares no memory
    return result


def _point_indices(template: tuple, tensors: list[Tensor]) -> list[Tensor]:
    """The tensors that are index items themselves (not slice bounds), in order."""
    it = iter(tensors)
    points = []
    for item in template:
        taken = [next(it) for _ in range(_slots_of(item))]
        if item is TENSOR_SLOT:
            points.extend(taken)
    return points


def _share_data_dependent_sizes(result: Tensor, tensor: Tensor, template: tuple, index_tensors: list[Tensor]) -> None:
    """Give the result's sizes known only when it runs the size every other value of that size
    has. The axis a boolean mask selects has the mask's own count of true elements: ``x[m]`` and
    ``y[m]`` have one size (their sum needs no check), which ``np.nonzero(m)`` shares. A slice
    with a tensor bound has one size per bounds and axis size (``slice_bounds_key``): in syr2k,
    ``C[i, :i + 1] += A[:i + 1, k] * B[i, k] + B[:i + 1, k] * A[i, k]`` over 200-element axes
    adds arrays of one size, whose elementwise ops then fuse into one loop."""
    masks = [t for t in index_tensors if t.dtype == np.bool_]
    sliced = _has_slice_slots(template)
    if (not masks and not sliced) or result._alternatives is not None:
        return
    builder = result._builder
    counts = [builder.true_count(mask._value) for mask in masks]
    bounds = _slice_bounds(template, index_tensors)

    def slice_size(k: int, axis_size: Dim) -> Dim:
        return builder.shared_slice_size(slice_bounds_key(bounds[k], axis_size))

    types = [t.type for t in index_tensors]
    shape = indexed_shape(tensor.shape, template, types, mask_counts=counts, slice_sizes=slice_size if sliced else None)
    builder.retype(result._own, shape)


def _slice_bounds(template: tuple, index_tensors: list[Tensor]) -> list[tuple[Any, ...]]:
    """The (start, stop, step) of each slice with a tensor bound, in order: a tensor bound as its
    value, the others as written."""
    it = iter(index_tensors)
    found = []
    for item in template:
        if isinstance(item, slice) and _slots_of(item):
            found.append(tuple(next(it)._value if b is TENSOR_SLOT else b for b in (item.start, item.stop, item.step)))
        else:
            for _ in range(_slots_of(item)):
                next(it)
    return found


def slice_bounds_key(bounds: tuple[Any, ...], axis_size: Dim) -> tuple[Any, ...]:
    """What the length of a slice with these bounds over an axis of ``axis_size`` depends on: the
    axis size, the static bounds, and of each tensor bound the expression computing it
    (``_expression_key``), so that ``i + 1`` written twice, two ops until CSE, is one bound."""
    keys = (_expression_key(b, _EXPRESSION_DEPTH) if isinstance(b, Value) else attr_key(b) for b in bounds)
    return (attr_key(axis_size), *keys)


# How deep a bound's expression is compared op by op; deeper, the value itself is the key.
_EXPRESSION_DEPTH = 6


def _expression_key(value: Value, depth: int) -> Any:
    """A key equal for two values computed alike: the same pure op (no effect, no region) with
    strictly equal attributes (``ir.attribute_keys``, CSE's rule) on operands with equal keys, or
    the same value."""
    owner = value.owner
    if depth == 0 or not isinstance(owner, Op) or owner.regions or get_op(owner.name).side_effect:
        return value
    try:
        attrs = attributes_key(owner)
    except UnhashableAttribute:
        return value
    operands = tuple(_expression_key(operand, depth - 1) for operand in owner.operands)
    return (owner.name, owner.results.index(value), attrs, operands, value.type)


def _index_write_back(parent: Tensor, new: Tensor, index_tensors: list[Tensor], attrs: dict[str, Any]) -> Tensor:
    """``parent`` with its basic-indexing view holding ``new``: ``parent[index] = new``."""
    return apply("setitem", parent, new, *index_tensors, template=attrs["template"])


def setitem(tensor, index: Any, value: Any):
    template, tensors = split_index(index)
    _refuse_out_of_bounds_where_it_always_runs("setitem", tensor, template, tensors)
    if isinstance(value, (list, tuple)):
        # NumPy assigns a sequence as the array it makes of it (`a[0] = [1.0, x[2]]`).
        value = array_from_nested("assignment", value) if contains_tensor(value) else np.asarray(value)
    return apply("setitem", tensor, value, *tensors, template=template)


def add_at(a, indices, b=None):
    """Staged ``np.add.at(a, indices, b)``: ``b`` added at ``a[indices]`` in place, repeated
    indices adding up. Other arrays than a function's own (a NumPy array captured from outside)
    go to the generic layer, which writes them as eager code does."""
    if not isinstance(a, Tensor) or b is None:
        raise UnsupportedOpError("np.add.at of an array that is not one of the function's", user_location())
    template, tensors = split_index(indices if isinstance(indices, tuple) else (indices,))
    _refuse_out_of_bounds_where_it_always_runs("np.add.at", a, template, tensors)
    if isinstance(b, (list, tuple)):
        b = array_from_nested("np.add.at", b) if contains_tensor(b) else np.asarray(b)
    a._assign(apply(INDEX_ADD, a, b, *tensors, template=template), "np.add.at")


UFUNC_METHOD_HANDLERS["add.at"] = add_at


@handles(np.take)
@method("take")
def take(a, indices, axis=None, out=None, mode="raise"):
    """Staged ``np.take`` (``mode='raise'``): indexing along one axis, or into the flattened array."""
    reject_unsupported("np.take", out=(out, None), mode=(mode, "raise"))
    if axis is None:
        return getitem(apply("reshape", a, shape=(a.size,)), indices)
    (axis,) = normalize_axes(axis, a.ndim, "np.take")
    return getitem(a, (slice(None),) * axis + (indices,))


INDEXING.update(read=getitem, write=setitem)


def _ndenumerate(array: Any) -> Any:
    """``np.ndenumerate`` of a tensor: its (index, element) pairs, in the order of
    ``np.ndindex(array.shape)``; a ``for`` loop over them unrolls, as it does over ``np.ndindex``."""
    if not isinstance(array, Tensor):
        return np.ndenumerate(array)
    return ((index, array[index]) for index in np.ndindex(array.shape))


CREATION_HANDLERS[np.ndenumerate] = _ndenumerate
