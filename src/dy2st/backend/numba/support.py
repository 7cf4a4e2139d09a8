"""Which parts of a graph the compiled tier can compile: the rules, read off the IR alone.

A ``while_loop`` compiles when everything it runs works on scalars and single elements (arithmetic,
comparisons and math functions on 0-d values, reading and writing one element of an array,
``A[i, j]`` and ``A[i, j] = v`` in place, array sizes, ``if``/``else``, inner loops) or on small
float arrays (views by ints and slices, gathers by integer arrays, vectorizable arithmetic, math
functions, stores into parts, sums and maxima of vectors). Those are the
loops that cost a Python round trip per element or per small array on the NumPy tier (a CRC over
bytes, a triangular solve by elements, syrk's row updates), and where compiled code is 10-250x
faster. Most reductions and NumPy function calls keep a loop on the NumPy tier. A fused group of
vectorizable arithmetic compiles into one loop over its elements (``fused_compiles``).

Every rule here keeps NumPy's semantics (``docs/compiled-tier.md``): values, dtypes and exceptions
are NumPy's, and where a construct could give another, it is not compiled. The one licensed
difference is the math functions' (``MATH_UFUNCS``): each result within 4 ulp of NumPy's.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

import numpy as np

from dy2st.backend.numba.axis_sums import (
    AxisSum,
    adds_element_by_element,
    element_ops,
    is_mean,
    plan_axis_sum,
)
from dy2st.backend.numba.carried_views import observed_results, overlap_check_is_noop
from dy2st.backend.numba.element_loops import element_loop
from dy2st.backend.numba.extremes import lane_order
from dy2st.backend.numba.int_bounds import SAFE_BITS, int_bits
from dy2st.backend.numba.products import written_out
from dy2st.backend.numba.vector_math import has_vector_form, pays_in_fused_groups
from dy2st.ir.core import ERRSTATE_ATTR, Block, Op, Value
from dy2st.ir.opcodes import AS_PYTHON_NUMBER, COND, CONST, DIM, WHILE_LOOP, YIELD
from dy2st.ir.opdefs import get_op, overwritten_operand, reads_element, stores_element
from dy2st.ir.symbolic import Symbol, SymExpr, symbols_in
from dy2st.ops.fused import FUSED
from dy2st.ops.indexing import COPY_IF_OVERLAPPING, TENSOR_SLOT
from dy2st.ops.linalg import ADD_MATMUL
from dy2st.ops.shape import EXPAND_DIMS, RESHAPE, TRANSPOSE

# The ufuncs compiled code calls on scalars: Numba implements each with NumPy's own loops once the
# operands have the loop's dtypes; where its results differ (division by zero, wrap-around,
# signed zeros), ``scalar_source`` writes NumPy's out. ``power`` is left out (NumPy raises for
# negative integer exponents; ``pow(-inf, 0.5)`` is ``inf`` in C, ``nan`` in NumPy), as are ufuncs
# with two results.
COMPILED_UFUNCS = frozenset(
    {
        np.add,
        np.subtract,
        np.multiply,
        np.true_divide,
        np.floor_divide,
        np.remainder,
        np.fmod,
        np.negative,
        np.positive,
        np.absolute,
        np.fabs,
        np.sign,
        np.square,
        np.sqrt,
        np.cbrt,
        np.reciprocal,
        np.exp,
        np.exp2,
        np.expm1,
        np.log,
        np.log2,
        np.log10,
        np.log1p,
        np.sin,
        np.cos,
        np.tan,
        np.arcsin,
        np.arccos,
        np.arctan,
        np.arctan2,
        np.sinh,
        np.cosh,
        np.tanh,
        np.arcsinh,
        np.arccosh,
        np.arctanh,
        np.hypot,
        np.deg2rad,
        np.rad2deg,
        np.floor,
        np.ceil,
        np.trunc,
        np.rint,
        np.logical_and,
        np.logical_or,
        np.logical_xor,
        np.logical_not,
        np.greater,
        np.greater_equal,
        np.less,
        np.less_equal,
        np.equal,
        np.not_equal,
        np.maximum,
        np.minimum,
        np.fmax,
        np.fmin,
        np.isnan,
        np.isinf,
        np.isfinite,
        np.signbit,
        np.copysign,
        np.bitwise_and,
        np.bitwise_or,
        np.bitwise_xor,
        np.invert,
        np.left_shift,
        np.right_shift,
    }
)

# Python's operators on the eager code's Python numbers that compiled code runs with Python's
# semantics (Numba's ``error_model='python'``: ``1 // 0`` raises ZeroDivisionError). Integer
# ``+ - * <<`` are checked for results beyond 64 bits (``scalar_source``), which raise OverflowError
# where Python's unbounded ints would go on; ``**`` is left out (``2 ** -1`` is a float).
PYTHON_OPERATORS = frozenset(
    {"+", "-", "*", "/", "//", "%", "<<", ">>", "&", "|", "^", "<", "<=", ">", ">=", "==", "!=", "~", "abs", "not"}
)

# Dtype kinds compiled code holds: booleans, integers, floats (not float16, which Numba does not
# compute in) and complex numbers.
_KINDS = frozenset("biufc")

COMPILED_LOOP = "compiled_loop"
"""The attribute the ``compiled-regions`` pass sets on a ``while_loop`` the compiled tier runs."""

COMPILED_SEQUENCE = "compiled_sequence"
"""The attribute the ``compiled-regions`` pass sets on compiled loops that follow one another in a
block (with only constants between them): the same number on each, and one function runs them
all, one call instead of one per loop."""

COMPILED_KERNEL = "compiled_kernel"
"""The attribute the ``compiled-regions`` pass sets on a fused group the compiled tier runs as one
compiled loop over its elements."""


def supported_dtype(dtype: np.dtype) -> bool:
    """Can compiled code hold values of this dtype?"""
    return dtype.kind in _KINDS and dtype != np.float16 and dtype.isnative


def representation(value: Value) -> np.dtype:
    """The dtype compiled code holds ``value`` in: a Python number (weakly typed) as Python holds
    it, in 64 bits (an int as int64, a float as float64); anything else in its own dtype."""
    if value.type.weak:
        return _PYTHON_DTYPES[value.type.dtype.kind]
    return value.type.dtype


_PYTHON_DTYPES = {
    "b": np.dtype(np.bool_),
    "i": np.dtype(np.int64),
    "u": np.dtype(np.int64),
    "f": np.dtype(np.float64),
    "c": np.dtype(np.complex128),
}


def python_truth_test(op: Op) -> bool:
    """Is ``op`` the ``x != 0`` of ``if x:`` for a Python number ``x`` (the lowering's
    ``truth_test``)? Compiled code compares it with zero, which is Python's truth (NaN is true)."""
    return bool(op.attrs.get("truth_test")) and all(v.type.weak for v in op.operands)


def python_semantics(op: Op) -> bool:
    """Does ``op`` run Python's operator on Python numbers in the eager code (the NumPy lowering's
    ``python_operator`` on weakly typed operands), rather than NumPy's ufunc?"""
    return "python_operator" in op.attrs and all(v.type.weak for v in op.operands)


# Array operations inside a compiled loop pay off while they are small: each costs a NumPy call
# (about a microsecond) on the NumPy tier, a few nanoseconds compiled. On large arrays NumPy runs
# at full speed already, and its tier fuses them and writes in place, where compiled code
# allocates a temporary per operation: such loops stay on the NumPy tier. The bound on their
# number keeps Numba's compile time near a second.
SMALL_ARRAY_ELEMENTS = 4096
MOST_ARRAY_OPS = 48
# Math functions on arrays cost Numba a C library call per element, about 10x NumPy's SIMD loops
# (tanh on float64: 7 ns against 0.7 ns an element): a loop of ``h = np.tanh(x[i] + h * 0.5 + b)``
# ran 0.27x the NumPy tier at 32 elements, 0.87x at 128 and 3.8x at 512. Larger ones stay there.
SMALL_MATH_ELEMENTS = 128
# Our own math functions (``vector_math``: tanh, exp) run vectorized, near NumPy's speed: the same
# loop ran 0.75x the NumPy tier at 512 float64 elements (0.48x float32) and 1.1x at 1024 (0.75x);
# with ``np.exp`` 0.36x (0.32x) at 512.
SMALL_OWN_MATH_ELEMENTS = 512
# The most elements an axis sum adds element by element (``axis_sums``: a kept last axis), computed
# where eager NumPy makes them into a temporary: one pass and no temporary. ``out[i] = np.sum(x[i]
# * w, axis=0)`` over 8 iterations, float64, medians on a loaded 2-core machine: 0.24x the NumPy
# tier at 64x64, 0.38x at 256x256, 1.7x at 512x512. A sum in pairwise runs (``axis=1``) fills a
# scratch vector per run and calls NumPy's summation, which allocates its stack for runs of more
# than 128: 0.45x at 64x64, 0.89x at 16x256, 2.0x at 256x256; those keep ``SMALL_ARRAY_ELEMENTS``.
SMALL_SUMMED_ELEMENTS = 65536
# Loops longer than this (unrolled inner loops, long bodies) took Numba 14-25 s to compile.
MOST_LOOP_OPS = 300


def loop_compiles(loop: Op, rerunnable: bool = True) -> bool:
    """Can the compiled tier run this ``while_loop``, all of it, and is it worth it?

    ``rerunnable``: the graph updates no argument in place, so a call can run again on the NumPy
    tier when a Python int outgrows 64 bits. Where it cannot, loops that multiply or shift Python
    ints (``h = h * 31``, which eager code carries past 2**63) stay on the NumPy tier."""
    values_fit = all(_value_fits(v) for v in (*loop.operands, *loop.results))
    if not values_fit or sum(1 for _ in loop.walk()) > MOST_LOOP_OPS:
        return False
    if not all(_block_compiles(region.block) for region in loop.regions):
        return False
    if not rerunnable:
        known: dict[Value, int | None] = {}
        if any(_grows_python_ints(op, known) for op in loop.walk()):
            return False
    return _arrays_carried_in_place(loop) and _array_work_is_small(loop)


def _grows_python_ints(op: Op, known: dict[Value, int | None]) -> bool:
    """Python-int arithmetic by which the eager code's int may grow past 64 bits: a product, a
    left shift, or a sum of two values neither of which is a literal (``h = h + h // 2``;
    ``i + 1`` is not, nor ``t + 3``), unless sizes, loop counters and literals bound it
    (``n - i``, ``i * -1``, ``int_bounds``)."""
    if not python_semantics(op) or op.results[0].type.dtype.kind not in "iu":
        return False
    symbol = op.attrs["python_operator"]
    if symbol not in ("*", "<<", "+", "-") or len(op.operands) != 2:
        return False
    if symbol in ("+", "-") and any(small_int_constant(v) is not None for v in op.operands):
        return False
    bits = int_bits(op.results[0], known)
    return bits is None or bits > SAFE_BITS


# Literal ints this small are far from the ends of int64: a loop counter plus one cannot overflow in
# any loop that finishes.
SMALL_INT = 2**31


def small_int_constant(value: Value) -> int | None:
    """The value of a literal Python int below ``SMALL_INT`` in size, else None."""
    owner = value.owner
    if isinstance(owner, Op) and owner.name == CONST:
        constant = owner.attrs["value"]
        if type(constant) is int and abs(constant) < SMALL_INT:
            return constant
    return None


def _array_work_is_small(loop: Op) -> bool:
    """Are the arrays the loop's operations make few, and small where their size matters
    (``SMALL_ARRAY_ELEMENTS``, and ``_math_elements_limit`` for the results of math functions),
    and the elements each axis sum adds few enough (``_summed_elements_limit``)?"""
    sums = axis_reduction_plans(loop)
    # The ops an axis sum computes element by element where it adds them make no array.
    producers = {plan.producer for plan in sums if plan.producer is not None}
    made = [
        r
        for op in loop.walk()
        # an update in place, a view, an overlap check (compiled as the array itself) or the
        # producer of an axis sum makes no new array
        if op is not loop
        and not op.regions
        and not updates_in_place(op)
        and not get_op(op.name).view
        and op.name != COPY_IF_OVERLAPPING
        and op not in producers
        for r in op.results
        if r.type.ndim
    ]
    if len(made) > MOST_ARRAY_OPS:
        return False
    sizes = _SizeEstimates(loop)
    readers: dict[Value, list[Op]] = {}
    for op in loop.walk():
        for operand in op.operands:
            readers.setdefault(operand, []).append(op)
    if not all(sizes.elements(v) <= SMALL_ARRAY_ELEMENTS for v in made if _size_counts(v, readers)):
        return False
    if not all(sizes.elements(plan.summed) <= _summed_elements_limit(plan) for plan in sums):
        return False
    for op in loop.walk():
        limit = _math_elements_limit(op)
        if limit is not None and sizes.elements(op.results[0]) > limit:
            return False
    return True


def _size_counts(value: Value, readers: dict[Value, list[Op]]) -> bool:
    """Does the size of an array the loop makes count against ``SMALL_ARRAY_ELEMENTS``?

    The limit keeps on the NumPy tier the loops whose array work costs more per element compiled
    than on NumPy (Numba's array expressions make a temporary per operation, where the NumPy tier
    fuses them and writes in place; our reductions against NumPy's SIMD loops), because there the
    NumPy calls compiled code saves per iteration no longer make up for it. An array whose every
    reader costs per element what NumPy's own code costs does not count, whatever its size: a view
    of it (which computes nothing, and counts by its own readers), an element read, a gather (a copy
    of the elements it names, as NumPy's advanced indexing makes) and a float product that calls
    BLAS as NumPy does (``written_out`` False: ``np.dot``). The number of iterations does not change
    this comparison: every iteration does the same element work on both tiers, and saves NumPy's
    calls on this one."""
    return not all(_costs_what_numpy_costs(reader) for reader in readers.get(value, []))


def _costs_what_numpy_costs(op: Op) -> bool:
    """Does ``op`` cost per element of its array operands what NumPy's code costs (``_size_counts``)?"""
    if reads_element(op):
        return op.results[0].type.ndim == 0 or bool(get_op(op.name).view) or compiled_gather(op)
    return small_matmul(op) and written_out(op, strided_operands(op)) is False


def _math_elements_limit(op: Op) -> int | None:
    """The most elements a math function (``MATH_UFUNCS``) giving an array may compute in a compiled
    loop: ``SMALL_MATH_ELEMENTS`` for a C library call per element, ``SMALL_OWN_MATH_ELEMENTS``
    for a function of our own (``vector_math``); None for any other op."""
    ufunc = get_op(op.name).ufunc
    if ufunc not in MATH_UFUNCS or op.results[0].type.ndim == 0:
        return None
    return SMALL_OWN_MATH_ELEMENTS if has_vector_form(ufunc, op.results[0].type.dtype) else SMALL_MATH_ELEMENTS


class _SizeEstimates:
    """The sizes of a loop's arrays in the call that built the graph, for the small-array limits.

    A data-dependent size is a part of an array cut by bounds read from data
    (``values[ptr[i]:ptr[i + 1]]``), or what is computed from such a part (``x[col[ptr[i]:ptr[i +
    1]]]`` has the size of the part of ``col``). A part of an array is no larger than the array:
    it counts as the largest axis of the array it is cut from, an upper bound in every iteration.
    The average part is smaller where the parts tile the array (CSR rows: the array's size over the
    number of iterations), but nothing in the IR tells tiling parts from overlapping ones (windows,
    prefixes), so the bound is not divided by the number of iterations: a loop of large parts that
    overlap would be compiled where its element work is dearer, many times over. A data-dependent
    size whose origin the loop does not show (an array made before it) counts as the largest axis
    of the arrays the loop reads from outside, as a guess."""

    def __init__(self, loop: Op):
        self.parts: dict[Symbol, int] = {}  # the bound of each part's size, by its symbol
        inside = {r for op in loop.walk() for r in op.results if op is not loop}
        inside |= {arg for op in loop.walk() for region in op.regions for arg in region.block.args}
        outside = [v for op in loop.walk() for v in op.operands if v.type.ndim and v not in inside]
        known = [d for v in outside for d in (self.dim(dim) for dim in v.type.shape) if d is not None]
        self.guess = max(known, default=SMALL_ARRAY_ELEMENTS)
        for op in loop.walk():
            if reads_element(op) and get_op(op.name).view:
                source = self.largest_axis(op.operands[0])
                for dim in op.results[0].type.shape:
                    symbol = _lone_data_dependent_symbol(dim)
                    if symbol is not None:
                        self.parts.setdefault(symbol, source)

    def dim(self, dim: Any) -> int | None:
        """A size: static, its value in the call that built the graph, or a part's bound; else None."""
        if isinstance(dim, int):
            return dim
        symbols = symbols_in(dim)
        if all(symbol.hint is not None for symbol in symbols):
            return int(dim.evaluate({symbol: symbol.hint for symbol in symbols}))
        symbol = _lone_data_dependent_symbol(dim)
        return None if symbol is None else self.parts.get(symbol)

    def largest_axis(self, value: Value) -> int:
        """The largest size of ``value``'s axes (``guess`` where one is not known)."""
        sizes = [self.dim(dim) for dim in value.type.shape]
        return self.guess if None in sizes or not sizes else max(s for s in sizes if s is not None)

    def elements(self, value: Value) -> int:
        """The element count of an array, each size not known counting as ``guess``."""
        count = 1
        for dim in value.type.shape:
            estimate = self.dim(dim)
            count *= self.guess if estimate is None else estimate
        return count


def _lone_data_dependent_symbol(dim: Any) -> Symbol | None:
    """The symbol of a size that is one data-dependent symbol itself (``u3``, not ``u3 - u2``)."""
    if not isinstance(dim, SymExpr) or len(dim.terms) != 1:
        return None
    ((monomial, coefficient),) = dim.terms
    if coefficient != 1 or len(monomial) != 1 or monomial[0].hint is not None:
        return None
    return monomial[0]


def _arrays_carried_in_place(loop: Op) -> bool:
    """Is every array the loop carries, at every iteration, one of the arrays it carried in (updated
    in place, or swapped with another) or a new array an op of the loop made (``h = np.tanh(h @ W)``)?
    Then the compiled function hands back the caller's own arrays, or new ones as eager code does;
    a view carried out would be a new object, not the view of the caller's array eager code holds.
    A loop result no caller can see (``carried_views.observed_results``: unused after the loop, or
    only read) may be a view (``y_prev = forward[:, j]``); the others may not come from it."""
    views = _view_slots(loop)
    if views and not views.isdisjoint(observed_results(loop)):
        return False
    body = loop.regions[1].block
    memo: dict[Value, bool] = {body.args[k]: False for k in views}
    for op in loop.walk():
        if op is loop or op.name not in (COND, WHILE_LOOP):
            continue  # the loop's own yields: above
        blocks = [op.regions[1].block] if op.name == WHILE_LOOP else [region.block for region in op.regions]
        for block in blocks:
            if not all(_comes_from_arguments(v, memo) for v in block.ops[-1].operands if v.type.ndim):
                return False
    return True


def returns_its_operand(loop: Op, index: int) -> bool:
    """Is the loop's array result ``index`` always the array it took as operand ``index``: the
    body yields its own argument there, changed only by in-place stores, directly or through
    ``cond``s and inner loops that do the same? The compiled call then hands back nothing for it
    (the caller holds the array already): Numba boxes each array it returns, about 0.2 us."""
    if loop.results[index].type.ndim == 0:
        return False
    body = loop.regions[1].block
    return _same_array(body.ops[-1].operands[index], body.args[index])


def _same_array(value: Value, target: Value) -> bool:
    """Is ``value`` the array ``target`` itself, through in-place stores and the results of
    ``cond``s and loops that keep it?"""
    while value is not target:
        owner = value.owner
        if not isinstance(owner, Op):
            return False
        if updates_in_place(owner):
            value = owner.operands[0]
        elif owner.name == WHILE_LOOP:
            index = owner.results.index(value)
            if not returns_its_operand(owner, index):
                return False
            value = owner.operands[index]
        elif owner.name == COND:
            index = owner.results.index(value)
            return all(_same_array(region.block.ops[-1].operands[index], target) for region in owner.regions)
        else:
            return False
    return True


def _view_slots(loop: Op) -> set[int]:
    """The positions of the arrays the loop carries that may be views at some iteration: those its
    body yields from anything but its arguments or new arrays, or from the arguments of such
    positions (``y_prev2 = y_prev``)."""
    body = loop.regions[1].block
    yielded = body.ops[-1].operands
    views: set[int] = set()
    while True:
        memo: dict[Value, bool] = {body.args[k]: False for k in views}
        found = {k for k, v in enumerate(yielded) if v.type.ndim and not _comes_from_arguments(v, memo)}
        if found <= views:
            return views
        views |= found


def _comes_from_arguments(value: Value, memo: dict[Value, bool]) -> bool:
    """Is the array ``value`` a block argument, or a new array, through in-place stores, overlap
    checks that never copy and the results of ``cond``s and loops that carry their arrays in place?
    (``memo``: a chain of ``if``s reaches each earlier result from both branches; it starts with
    the block arguments that may be views, as False.)"""
    found = memo.get(value)
    if found is not None:
        return found
    origin = value
    owner = value.owner
    while isinstance(owner, Op) and (updates_in_place(owner) or owner.name == COPY_IF_OVERLAPPING):
        value = owner.operands[0]
        owner = value.owner
    found = memo.get(value)
    if found is not None:
        memo[origin] = found
        return found
    if not isinstance(owner, Op):
        found = True  # a block argument: of this loop, or of a region inside it
    elif owner.name == COND:
        index = owner.results.index(value)
        found = all(_comes_from_arguments(r.block.ops[-1].operands[index], memo) for r in owner.regions)
    elif owner.name == WHILE_LOOP:
        found = _comes_from_arguments(owner.operands[owner.results.index(value)], memo)
    else:
        # A new array: a fused group's, a ufunc's, a product's or a gather's.
        found = (
            owner.name == FUSED
            or _array_ufunc(owner)
            or small_matmul(owner)
            or accumulated_product(owner)
            or compiled_gather(owner)
            or reduces_into_new_array(owner)
        )
    memo[origin] = found
    return found


def reduces_into_new_array(op: Op) -> bool:
    """Is ``op`` a reduction over axes computed into an array of its own
    (``compiled_axis_reduction``), no view?"""
    return get_op(op.name).reduction and op.results[0].type.ndim > 0 and compiled_axis_reduction(op) is not None


def _block_compiles(block: Any) -> bool:
    return all(_value_fits(arg) for arg in block.args) and all(op_compiles(op) for op in block.ops)


def _value_fits(value: Value) -> bool:
    """A value compiled code can hold: a scalar or an array of a supported dtype in native order."""
    return supported_dtype(value.type.exact_dtype)


def op_compiles(op: Op) -> bool:
    """Can compiled code run ``op`` (and, for ops with regions, everything in them)?"""
    if op.attrs.get(ERRSTATE_ATTR) or not all(_value_fits(v) for v in (*op.operands, *op.results)):
        return False
    name = op.name
    if name == YIELD or name == DIM:
        return True
    if name in (COND, WHILE_LOOP, FUSED):
        return _structure_compiles(op)
    if name == CONST:
        return _scalar_constant(op)
    if name == AS_PYTHON_NUMBER:
        return op.operands[0].type.ndim == 0
    if name == COPY_IF_OVERLAPPING:
        return overlap_check_is_noop(op)  # compiled as the array itself
    if reads_element(op):
        return _read_compiles(op)
    if stores_element(op):
        return _element_store(op) or _part_store(op)
    return (
        _scalar_ufunc(op)
        or scalar_select(op)
        or _array_ufunc(op)
        or small_matmul(op)
        or float_vector_sum(op)
        or vector_extreme(op)
        or compiled_axis_reduction(op) is not None
        or reshaped_view(op)
        or transposed_matrix(op)
        or accumulated_product(op)
    )


def _read_compiles(op: Op) -> bool:
    """An indexing read: one element, a view by ints and slices, or a gather."""
    if op.results[0].type.ndim == 0:
        return _element_index(op, first=1)
    if get_op(op.name).view:
        return basic_template(op.attrs["template"], op.operands[1:], new_axes=True)
    return compiled_gather(op)


def compiled_gather(op: Op) -> bool:
    """``x[idx]`` by an array ``idx`` of integers, of any dtype and shape, indexing the first axis of
    ``x`` (NumPy's advanced indexing: a new array of shape ``idx.shape + x.shape[1:]``, ``x``'s
    dtype): written out as a loop over ``idx`` copying the elements (rows) it names, each index
    checked against the axis and a negative one counted from its end, as NumPy does
    (``loop_source.emit_gather``). Boolean masks, whose count is data, stay on the NumPy tier."""
    if not reads_element(op) or get_op(op.name).view or len(op.operands) != 2:
        return False
    template = op.attrs["template"]  # may hold concrete index arrays (``x[[3, 2]]``): compared by identity
    if len(template) != 1 or template[0] is not TENSOR_SLOT:
        return False
    x, index = (v.type for v in op.operands)
    result = op.results[0].type
    if x.ndim == 0 or index.ndim == 0 or index.dtype.kind not in "iu" or index.weak:
        return False
    return result.dtype == x.dtype and result.ndim == index.ndim + x.ndim - 1


def reshaped_view(op: Op) -> bool:
    """``np.expand_dims(x, axes)`` (the outer product ``np.expand_dims(h, 1) * np.expand_dims(g,
    0)`` of a weight's cotangent in a backward loop) or ``x.reshape(shape)`` to sizes known when
    the graph is built, of a C-contiguous array inside a loop: compiled as
    ``x.reshape(...)``, a view of ``x`` as NumPy's is. Numba reshapes only contiguous arrays."""
    if op.name == RESHAPE and not all(isinstance(d, int) for d in op.results[0].type.shape):
        return False
    if op.name not in (EXPAND_DIMS, RESHAPE):
        return False
    x = op.operands[0]
    return x.type.ndim > 0 and _c_contiguous(x)


def updates_in_place(op: Op) -> bool:
    """A functional update of its first operand the ``in-place-updates`` pass runs in that
    operand's own buffer (``A[i] = v``, ``add_matmul``): its result is the operand's array."""
    return get_op(op.name).updates_operand == 0 and overwritten_operand(op) == 0


def accumulated_product(op: Op) -> bool:
    """``c + a @ b`` of float matrices of one dtype (``add_matmul``, the blocked weight
    cotangents of a backward loop): written out as loops adding each product into ``c``'s
    elements (``products``), in ``c``'s own buffer where the update runs in place, else in a copy."""
    if op.name != ADD_MATMUL:
        return False
    types = [v.type for v in (*op.operands, *op.results)]
    return all(t.ndim == 2 and not t.weak and t.dtype == types[0].dtype for t in types) and types[0].dtype.kind == "f"


def transposed_matrix(op: Op) -> bool:
    """``x.T`` of a 2-d array inside a loop (``A[j:k].T @ G``, the blocked weight cotangents of a
    backward loop): compiled as ``x.T``, a view as NumPy's is."""
    return op.name == TRANSPOSE and op.operands[0].type.ndim == 2 and tuple(op.attrs["axes"]) == (1, 0)


def scalar_select(op: Op) -> bool:
    """``np.where(c, x, y)`` of 0-d values, compiled as ``x if c else y``: the condition a bool,
    each of ``x`` and ``y`` already of the result's dtype or a Python float cast to a float
    result (a cast NumPy does the same way; a Python int NumPy may wrap around is left out)."""
    if not get_op(op.name).select or not all(v.type.ndim == 0 for v in (*op.operands, *op.results)):
        return False
    condition, *choices = op.operands
    result = op.results[0].type.dtype
    if condition.type.dtype != np.bool_ or not supported_dtype(result):
        return False
    return all(
        representation(v) == result or (v.type.weak and v.type.dtype.kind == "f" and result.kind == "f")
        for v in choices
    )


def float_vector_sum(op: Op) -> bool:
    """``x.sum()`` or ``x.mean()`` of a 1-d float32/float64 array, a NumPy scalar of its dtype:
    compiled as NumPy's own pairwise summation (``_numpy_pairwise_sum``), which gives its bits."""
    opdef = get_op(op.name)
    if not opdef.reduction or opdef.row_reduction is None or len(op.operands) != 1:
        return False
    if opdef.row_reduction != np.add.reduce and not is_mean(op):
        return False
    source, result = op.operands[0].type, op.results[0].type
    if source.ndim != 1 or source.weak or source.dtype.kind not in _ARRAY_KINDS or result.shape:
        return False
    attrs = op.attrs
    if attrs.get("axis") not in (None, 0, (0,)) or attrs.get("keepdims") or attrs.get("dtype") is not None:
        return False
    return result.dtype == source.dtype


def compiled_axis_sum(op: Op) -> AxisSum | None:
    """``np.sum(x, axis)`` or ``np.mean(x, axis)`` of a float32/float64 array over some of its axes
    (``keepdims`` too) inside a loop, of its dtype, compiled as one loop nest adding in NumPy's
    order (``axis_sums``), which gives its bits: None where it is not compiled so. The summed
    array is as ``_in_numpys_order`` says. A mean divides by the count as ``np.mean`` does; one
    over an axis of static length 0 (NaN, with NumPy's "Mean of empty slice" warning) stays on
    the NumPy tier. ``x.sum()`` of a vector is ``float_vector_sum``'s."""
    if float_vector_sum(op):
        return None
    plan = plan_axis_sum(op)
    if plan is None or plan.extreme:
        return None
    source, result = plan.summed.type, op.results[0].type
    if source.weak or source.dtype.kind not in _ARRAY_KINDS or result.dtype != source.dtype:
        return None
    if plan.averages and any(plan.sizes[axis] == 0 for axis in plan.reduced):
        return None
    return _in_numpys_order(plan)


def compiled_axis_extreme(op: Op) -> AxisSum | None:
    """``np.max(x, axis)`` or ``np.min(x, axis)`` (``np.maximum.reduce``, ``keepdims``) of an
    integer or float array over some of its axes inside a loop, of its dtype, compiled as one
    loop nest visiting the elements in NumPy's order with its reduction's steps (``axis_sums``,
    ``extremes``), which gives its bits, ties of 0.0 and -0.0 and NaNs included: None where it is
    not compiled so. Float ones compile where ``extremes.lane_order`` found how this machine's
    NumPy reduces them, of an array as ``_in_numpys_order`` says; integer ones of any array the
    loop holds (any order gives their bits). ``x.max()`` of a vector is ``vector_extreme``'s."""
    if vector_extreme(op):
        return None
    plan = plan_axis_sum(op)
    if plan is None or not plan.extreme:
        return None
    source, result = plan.summed.type, op.results[0].type
    if source.weak or source.dtype.kind not in "iuf" or result.dtype != source.dtype:
        return None
    if source.dtype.kind in "iu":
        return plan if plan.producer is None and all(_value_fits(v) for v in plan.inputs) else None
    return _in_numpys_order(plan) if lane_order(source.dtype) is not None else None


def compiled_axis_reduction(op: Op) -> AxisSum | None:
    """A sum, mean, maximum or minimum over axes compiled as one loop nest, or None."""
    return compiled_axis_sum(op) or compiled_axis_extreme(op)


def _in_numpys_order(plan: AxisSum) -> AxisSum | None:
    """``plan`` where compiled code visits the reduced float elements in NumPy's order, else None.
    The reduced array is either made by ufuncs giving NumPy's bits (``+ - * /``, ... of
    ``VECTORIZED_UFUNCS``) that nothing else reads, computed element by element where it is
    reduced and never made (``np.sum(window * weights, axis=(1, 2, 3))``), or a C-contiguous array
    the loop holds (``x[i].sum(axis=0)``).

    NumPy's order depends on the reduced array's memory order. Every array a compiled loop holds
    is C-ordered (its strides never grow from an outer axis to an inner one, ignoring axes of
    length 1): arguments are C-contiguous (the call checks), views by ints, slices and new axes
    keep their base's order, and no op that compiles transposes. Eager NumPy makes an
    elementwise result of C-ordered operands C-contiguous (``order='K'`` keeps C order), so the
    product eager reduces is C-contiguous, as ``axis_sums`` assumes. An array read as it is must
    be C-contiguous itself: NumPy's iterator cannot merge the axes of a strided view, and would
    visit other runs."""
    if not all(_value_fits(v) for v in plan.inputs):
        return None
    if plan.producer is None:
        return plan if _surely_c_contiguous(plan.summed) else None
    return plan if all(_exact_element_op(inner) for inner in element_ops(plan)) else None


def _surely_c_contiguous(value: Value) -> bool:
    """Is the array ``value`` C-contiguous in eager NumPy whenever a compiled loop reads it? A
    parameter of the compiled function is (the call checks), and so is a new array; a view is
    where it takes whole rows of such an array (``_contiguous_template``). A fused group's input is
    its operand; a loop's carried array starts as its initial value, and is then an array the
    loop makes or carries in (``_arrays_carried_in_place``). Anything else counts as strided."""
    owner = value.owner
    if isinstance(owner, Block):
        region = owner.parent
        holder = region.parent if region is not None else None
        if holder is None:
            return True  # an argument of the graph: a parameter of the compiled function
        if holder.name in (FUSED, WHILE_LOOP):
            return _surely_c_contiguous(holder.operands[value.index])
        return False
    if not isinstance(owner, Op) or owner.name in (COND, WHILE_LOOP):
        return False
    if stores_element(owner):
        return _surely_c_contiguous(owner.operands[0])  # the array updated in place
    if not get_op(owner.name).view:
        return True  # a new array (a view of it is the case below)
    template = owner.attrs.get("template")
    if not reads_element(owner) or template is None or not _contiguous_template(template):
        return False
    return _surely_c_contiguous(owner.operands[0])


def _exact_element_op(op: Op) -> bool:
    """An op compiled code computes one element at a time with NumPy's bits: a 0-d constant, or
    vectorizable arithmetic on floats (``VECTORIZED_UFUNCS``) in the dtypes NumPy's loop has."""
    if op.name == CONST:
        return _scalar_constant(op)
    dtypes = _element_dtypes(op)
    return dtypes is not None and get_op(op.name).ufunc in VECTORIZED_UFUNCS and all(d.kind == "f" for d in dtypes)


def _summed_elements_limit(plan: AxisSum) -> int:
    """The most elements the axis sum ``plan`` may add in a compiled loop."""
    return SMALL_SUMMED_ELEMENTS if adds_element_by_element(plan) else SMALL_ARRAY_ELEMENTS


def axis_reduction_plans(loop: Op) -> list[AxisSum]:
    """The reductions over axes in ``loop`` compiled as loop nests (``compiled_axis_reduction``)."""
    plans = (compiled_axis_reduction(op) for op in loop.walk() if get_op(op.name).reduction)
    return [plan for plan in plans if plan is not None]


def absorbed_ops(loop: Op) -> set[Op]:
    """The producers of the axis sums in ``loop``, whose arrays are never made: the sums compute
    their elements where they add them."""
    return {plan.producer for plan in axis_reduction_plans(loop) if plan.producer is not None}


def vector_extreme(op: Op) -> bool:
    """``x.max()`` or ``x.min()`` (``np.max``, ``np.amin``, ...) of a 1-d integer or float array, a
    NumPy scalar of its dtype: compiled as NumPy's own reduction (``extremes``), which gives its
    bits, ties of 0.0 and -0.0 and NaNs included. Float ones compile where ``extremes.lane_order``
    found how this machine's NumPy reduces them."""
    opdef = get_op(op.name)
    if not opdef.reduction or opdef.row_reduction not in (np.maximum.reduce, np.minimum.reduce):
        return False
    source, result = op.operands[0].type, op.results[0].type
    if len(op.operands) != 1 or source.ndim != 1 or source.weak or source.dtype.kind not in "iuf" or result.shape:
        return False
    if op.attrs.get("axis") not in (None, 0, (0,)) or op.attrs.get("keepdims") or result.dtype != source.dtype:
        return False
    return source.dtype.kind in "iu" or lane_order(source.dtype) is not None


def small_matmul(op: Op) -> bool:
    """``a @ b`` or ``np.dot(a, b)`` of 1-d and 2-d float or integer arrays of one dtype inside a
    loop (``_array_work_is_small`` bounds its size), an array or, of two vectors, a NumPy scalar:
    loops over the elements below the sizes where BLAS is faster, else Numba's ``np.dot``, which
    calls BLAS through SciPy (``products``). Without SciPy loops with float products that may
    call ``np.dot`` stay on the NumPy tier."""
    if get_op(op.name).kernel not in (np.matmul, np.dot) or len(op.operands) != 2:
        return False
    a, b = (v.type for v in op.operands)
    result = op.results[0].type
    if not (1 <= a.ndim <= 2 and 1 <= b.ndim <= 2):
        return False
    if a.weak or b.weak or not a.dtype == b.dtype == result.dtype or result.dtype.kind not in _PRODUCT_KINDS:
        return False
    strided = strided_operands(op)
    if written_out(op, strided) is True:
        return True  # loops only (``products``): integer products, small ones, strided vectors
    # Strided operands Numba's np.dot would copy: such products compile only as loops. A
    # transposed row block (F-ordered) it passes to BLAS as it is.
    return all(_c_contiguous(v) or _transposed_contiguous(v) for v in op.operands) and numba_blas_available()


def strided_operands(op: Op) -> bool:
    """Is an operand of the product ``op`` possibly not C-contiguous (a column, a reversed
    vector)?"""
    return not all(_c_contiguous(v) for v in op.operands)


# Matrix products compile for float and integer arrays (not booleans or complex numbers).
_PRODUCT_KINDS = frozenset("iuf")


def _c_contiguous(value: Value) -> bool:
    """Is the array ``value`` C-contiguous whenever a compiled loop holds it? Loop parameters are
    (the call checks ``flags.carray``), and so are new arrays; a view is where it takes whole
    rows: integer indices, then one slice of step one, then only full slices (``A[i, :j]``,
    ``A[i:j]``). Products of other views are written out as loops (``products``): Numba's
    ``np.dot`` would copy them first."""
    owner = value.owner
    if not isinstance(owner, Op) or not get_op(owner.name).view:
        return True
    if not reads_element(owner) or "template" not in owner.attrs:
        return False
    sliced = partial = False
    for item in owner.attrs["template"]:
        if isinstance(item, slice):
            if partial or item.step not in (None, 1):
                return False
            sliced, partial = True, item != slice(None)
        elif sliced or item is None or item is Ellipsis:
            return False
    return _c_contiguous(owner.operands[0])


def _transposed_contiguous(value: Value) -> bool:
    """Is ``value`` the transpose of a C-contiguous 2-d array (F-contiguous)?"""
    owner = value.owner
    return isinstance(owner, Op) and transposed_matrix(owner) and _c_contiguous(owner.operands[0])


@functools.cache
def numba_blas_available() -> bool:
    """Can Numba call BLAS (``np.dot`` in compiled code)? It takes the routines from SciPy."""
    try:
        importlib.import_module("scipy.linalg.cython_blas")
    except ImportError:
        return False
    return True


def _structure_compiles(op: Op) -> bool:
    """A ``cond`` on a scalar, a loop, or a group of ops, whose regions compile."""
    if op.name == COND and op.operands[0].type.ndim != 0:
        return False
    if op.name == FUSED and element_loop(op) is not None:
        block = op.regions[0].block
        inner = [v for o in block.ops for v in (*o.operands, *o.results)]
        return all(_value_fits(v) for v in (*block.args, *inner)) and all(_element_loop_op(o) for o in block.ops[:-1])
    return all(_block_compiles(region.block) for region in op.regions)


def _element_loop_op(op: Op) -> bool:
    """An op of a fused group that a compiled loop computes one element at a time
    (``element_loops``): a 0-d constant or scalar ufunc, or a ufunc on float arrays, the
    vectorizable arithmetic or a math function, whose operands' elements are cast to the dtypes of
    NumPy's loop as NumPy casts them (``float64_coefficient * float32_column`` computes in float64)
    and computed as on scalars, with NumPy's semantics."""
    if op.attrs.get(ERRSTATE_ATTR):
        return False
    if op.name == CONST:
        return _scalar_constant(op)
    if op.results[0].type.ndim == 0:
        return _scalar_ufunc(op)
    ufunc = get_op(op.name).ufunc
    if ufunc is None or ufunc.nout != 1 or python_semantics(op):
        return False
    if ufunc not in VECTORIZED_UFUNCS and ufunc not in MATH_UFUNCS:
        return False
    dtypes = loop_dtypes(op)
    return dtypes is not None and all(d.kind in _ARRAY_KINDS for d in dtypes[:-1]) and dtypes[-1].kind in "fb"


def basic_template(template: tuple[Any, ...], tensors: list[Value], new_axes: bool = False) -> bool:
    """An index of ints and slices only (ints, 0-d integers and ``None`` as bounds), one item per
    axis from the first: what compiled code writes as ``A[i, a:b]``, a view; ``new_axes``: with
    ``None`` items too (``A[:, i, None]``, an axis of length 1 inserted, as Numba's views do)."""
    if len(tensors) != sum(1 for item in template if item is TENSOR_SLOT) + sum(
        1
        for item in template
        if isinstance(item, slice)
        for p in (item.start, item.stop, item.step)
        if p is TENSOR_SLOT
    ):
        return False
    if not all(v.type.ndim == 0 and v.type.dtype.kind in "iu" for v in tensors):
        return False
    for item in template:
        if isinstance(item, slice):
            if not all(p is None or p is TENSOR_SLOT or _is_int(p) for p in (item.start, item.stop, item.step)):
                return False
            if _is_int(item.step) and item.step == 0:
                return False
        elif not (item is TENSOR_SLOT or _is_int(item) or (new_axes and item is None)):
            return False
    return True


# Array operations inside compiled loops work on real floating-point arrays, where Numba's array
# ufuncs compute what NumPy's do (integer arrays would need NumPy's wrap-around and division
# rules, which only the scalar forms implement).
_ARRAY_KINDS = frozenset("f")


def _array_ufunc(op: Op) -> bool:
    """A ufunc on arrays (and scalars) of float32/float64, giving an array, inside a loop: the
    vectorizable arithmetic, which gives NumPy's bits, or a math function (``MATH_UFUNCS``), each
    result within 4 ulp of NumPy's as on scalars."""
    ufunc = get_op(op.name).ufunc
    if ufunc is None or ufunc.nout != 1 or python_semantics(op):
        return False
    if ufunc not in VECTORIZED_UFUNCS and ufunc not in MATH_UFUNCS:
        return False
    if ufunc in (np.maximum, np.minimum, np.fmax, np.fmin, np.sign, np.copysign):
        return False  # Numba's array forms treat signed zeros otherwise; the scalar forms are NumPy's
    if op.results[0].type.ndim == 0 or op.results[0].type.dtype.kind not in "fb":
        return False
    dtypes = loop_dtypes(op)
    if dtypes is None or not all(d.kind in _ARRAY_KINDS for d in dtypes[:-1]):
        return False
    # Array operands already have the loop's dtype: Numba then picks NumPy's loop.
    return all(v.type.ndim == 0 or v.type.dtype == d for v, d in zip(op.operands, dtypes))


def _part_store(op: Op) -> bool:
    """``A[i, a:b] = v`` in ``A``'s own buffer, of an array of ``A``'s dtype or, for a float ``A``,
    of another float dtype (broadcast to the part as NumPy does; a shape that does not fit raises
    ValueError in both) or of a scalar NumPy casts there."""
    template = op.attrs["template"]
    if overwritten_operand(op) != 0 or not basic_template(template, op.operands[2:]):
        return False
    target, value = op.operands[0].type, op.operands[1].type
    if target.dtype.kind not in _ARRAY_KINDS and not (value.ndim and target.dtype.kind in "iu"):
        return False  # an integer part takes a copy of an array of its dtype (a product's rows)
    if value.ndim == 0:
        return value.dtype == target.dtype or bool(np.can_cast(value.dtype, target.dtype, "same_kind"))
    # The axes the part keeps: its slices and the axes after the template (``A[i] = row``).
    kept = sum(1 for item in template if isinstance(item, slice)) + target.ndim - len(template)
    # A float array of another precision is cast as NumPy casts it (rounded to nearest, even).
    same_kind = value.dtype == target.dtype or value.dtype.kind == target.dtype.kind == "f"
    return same_kind and value.ndim <= kept


def _scalar_ufunc(op: Op) -> bool:
    """An elementwise ufunc on 0-d values that compiled code computes as NumPy does."""
    ufunc = get_op(op.name).ufunc
    if ufunc is None or ufunc.nout != 1 or ufunc not in COMPILED_UFUNCS:
        return False
    if not all(v.type.ndim == 0 for v in (*op.operands, *op.results)):
        return False
    if python_truth_test(op):
        return True
    if python_semantics(op):
        return op.attrs["python_operator"] in PYTHON_OPERATORS
    return loop_dtypes(op) is not None


def loop_dtypes(op: Op) -> tuple[np.dtype, ...] | None:
    """The dtypes of the NumPy loop ``op``'s ufunc runs for its operands (inputs then output), as
    NumPy resolves them, weakly typed operands included; None if NumPy finds none or the output is
    not the op's result dtype."""
    ufunc = get_op(op.name).ufunc
    assert ufunc is not None
    described: list[Any] = [_PYTHON_TYPES[v.type.dtype.kind] if v.type.weak else v.type.dtype for v in op.operands]
    try:
        dtypes = ufunc.resolve_dtypes((*described, None))
    except (TypeError, ValueError, np.exceptions.DTypePromotionError):
        return None
    if dtypes[-1] != op.results[0].type.dtype or not all(supported_dtype(d) for d in dtypes):
        return None
    return tuple(dtypes)


_PYTHON_TYPES = {"b": bool, "i": int, "u": int, "f": float, "c": complex}


def _element_index(op: Op, first: int) -> bool:
    """Does the op's template index one element of its array with ints and 0-d integers (the
    tensor operands from ``first`` on)?"""
    array = op.operands[0]
    template = op.attrs["template"]
    if array.type.ndim == 0 or len(template) != array.type.ndim:
        return False
    slots = sum(1 for item in template if item is TENSOR_SLOT)
    indices = op.operands[first:]
    if slots != len(indices) or not all(v.type.ndim == 0 and v.type.dtype.kind in "iu" for v in indices):
        return False
    return all(item is TENSOR_SLOT or _is_int(item) for item in template)


def _is_int(item: Any) -> bool:
    return isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_))


def _element_store(op: Op) -> bool:
    """``A[i, j] = v`` of a 0-d value, in ``A``'s own buffer, with a cast NumPy makes too."""
    if overwritten_operand(op) != 0 or op.operands[1].type.ndim != 0 or not _element_index(op, first=2):
        return False
    target = op.operands[0].type.dtype
    value = op.operands[1].type
    if value.dtype == target:
        return True
    if value.weak and value.dtype.kind in "iu":
        return target.kind in "iufc"  # range-checked for integer targets, as NumPy does
    if value.dtype.kind in "iu" and target.kind in "iu":
        return False  # NumPy wraps some of these casts and refuses others (OverflowError)
    return bool(np.can_cast(value.dtype, target, "same_kind")) and not (target.kind in "iu" and value.dtype.kind == "b")


# The ufuncs a compiled element loop computes faster than NumPy's own loops: arithmetic the CPU
# does in a few instructions, which LLVM vectorizes. Numba calls the C library for the others
# (exp, tanh, power, ...), one element at a time, where NumPy has vectorized implementations:
# a fused group using them stays on the NumPy tier's tiles, unless it is one of our own functions
# that pays there (``vector_math.pays_in_fused_groups``: float32 tanh and exp).
VECTORIZED_UFUNCS = frozenset(
    {np.add, np.subtract, np.multiply, np.true_divide, np.negative, np.positive, np.absolute, np.fabs}
    | {np.square, np.sqrt, np.reciprocal, np.floor, np.ceil, np.trunc, np.rint, np.maximum, np.minimum}
    | {np.fmax, np.fmin, np.copysign, np.sign, np.greater, np.greater_equal, np.less, np.less_equal}
    | {np.equal, np.not_equal, np.logical_and, np.logical_or, np.logical_xor, np.logical_not}
    | {np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.invert, np.isnan, np.isinf, np.isfinite}
    | {np.left_shift, np.right_shift}
)


# The math functions compiled loops apply to float arrays as they do to scalars: our own vectorized
# ones where there is one (``vector_math``: tanh, exp), else Numba calls the C library's function on
# each element, within 4 ulp of NumPy's result (NumPy may use SIMD versions of its own), the compiled
# tier's contract for transcendental functions (docs/compiled-tier.md). The
# ufuncs of ``COMPILED_UFUNCS`` left out have scalar forms of NumPy's own (``scalar_source``) that
# Numba's array forms do not share: floor division, remainders, ``power``.
MATH_UFUNCS = frozenset(
    {np.exp, np.exp2, np.expm1, np.log, np.log2, np.log10, np.log1p, np.cbrt, np.hypot}
    | {np.sin, np.cos, np.tan, np.arcsin, np.arccos, np.arctan, np.arctan2, np.deg2rad, np.rad2deg}
    | {np.sinh, np.cosh, np.tanh, np.arcsinh, np.arccosh, np.arctanh}
)


def fused_compiles(op: Op) -> bool:
    """Can the compiled tier run this fused group as one loop over its elements? Its ops must be
    ufuncs computed with NumPy's semantics, its results arrays of one shape, and each of its
    inputs a scalar or an array of that shape (a broadcast row stays on the NumPy tier's tiles)."""
    if op.name != FUSED or op.attrs.get("unfused") or op.attrs.get(ERRSTATE_ATTR) or not op.results:
        return False
    shape = op.results[0].type.shape
    if not shape or any(r.type.shape != shape for r in op.results):
        return False
    if not all(_value_fits(v) for v in (*op.operands, *op.results)):
        return False
    block = op.regions[0].block
    if not all(arg.type.ndim == 0 or arg.type.shape == shape for arg in block.args):
        return False
    if not all(v.type.ndim == 0 or _likely_contiguous(v) for v in op.operands):
        return False  # each call would go to the NumPy tier, after a check that costs a microsecond
    return all(_element_op(inner, shape) for inner in block.ops[:-1])


def _likely_contiguous(value: Value) -> bool:
    """Is ``value`` C-contiguous when the graph runs, as far as the IR tells? Not a view that
    skips elements: a column ``A[:, k]``, a strided ``x[::2]``, a transpose."""
    owner = value.owner
    if not isinstance(owner, Op) or not get_op(owner.name).view:
        return True  # an argument or a fresh array
    if not reads_element(owner):
        return False
    return _contiguous_template(owner.attrs["template"])


def _contiguous_template(template: tuple[Any, ...]) -> bool:
    """Leading integers, then at most one slice of step 1, then whole axes: a C-contiguous part."""
    items = list(template)
    while items and (items[0] is TENSOR_SLOT or _is_int(items[0])):
        items.pop(0)
    if items and isinstance(items[0], slice) and items[0].step in (None, 1):
        items.pop(0)
    return all(isinstance(item, slice) and item == slice(None) for item in items)


def _element_op(op: Op, shape: tuple[Any, ...]) -> bool:
    """An op of a fused group the compiled loop computes per element (not on complex numbers,
    whose absolute value and division NumPy vectorizes and Numba computes with library calls)."""
    values = (*op.operands, *op.results)
    if not all(v.type.ndim == 0 or v.type.shape == shape for v in values):
        return False
    if any(v.type.dtype.kind == "c" for v in values):
        return False
    if op.name == CONST:
        return _scalar_constant(op)
    dtypes = _element_dtypes(op)
    ufunc = get_op(op.name).ufunc
    if dtypes is None or ufunc is None:
        return False
    return ufunc in VECTORIZED_UFUNCS or pays_in_fused_groups(ufunc, dtypes[0])


def _element_dtypes(op: Op) -> tuple[np.dtype, ...] | None:
    """The dtypes of NumPy's loop for a ufunc with one result computed on single elements with
    NumPy's semantics (``loop_dtypes``), of values compiled code holds; None for any other op."""
    ufunc = get_op(op.name).ufunc
    if ufunc is None or ufunc.nout != 1 or python_semantics(op):
        return None
    if not all(_value_fits(v) for v in (*op.operands, *op.results)):
        return None
    return loop_dtypes(op)


def uses_own_math(op: Op) -> bool:
    """Does the fused group ``op`` compute a math function of our own (``vector_math``)?"""
    for inner in op.regions[0].block.ops:
        ufunc = get_op(inner.name).ufunc
        if ufunc is not None and inner.results and has_vector_form(ufunc, inner.results[0].type.dtype):
            return True
    return False


def _scalar_constant(op: Op) -> bool:
    """A 0-d constant compiled code writes as a literal (a Python number or a NumPy scalar)."""
    return op.results[0].type.ndim == 0 and isinstance(op.attrs["value"], (bool, int, float, complex, np.generic))
