"""Write a ``while_loop`` the ``compiled-regions`` pass marked as the source of one Numba function.

The function takes the values the loop reads from outside (arrays and scalars) and returns the
loop's results. Every value has the dtype NumPy gives it: each ufunc's operands are cast to the
dtypes of the NumPy loop NumPy would run (``support.loop_dtypes``) and its result to the op's
dtype, so Numba's own promotion rules never decide a type. Example, ``s += x[i]`` over float32::

    @numba.njit(cache=CACHE, error_model="python", nogil=True)
    def loop_0(p0, p1, p2):
        w0 = p1
        for w1 in range(0, p2):
            if w1 < -p0.shape[0] or w1 >= p0.shape[0]:
                raise IndexError("index out of bounds for axis 0 (kernel.py:5)")
            v0 = p0[w1]
            v1 = np.float32(np.add(w0, v0))
            w0 = v1
        w1 = p2 if p2 > 0 else 0
        return (w0, w1, )

Indices are checked against the array's size before every access (compiled code never reads or
writes out of bounds); the error names the user's line and ``errors`` maps it back to the op.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dy2st.backend.numba.bounds import HoistedIndex, counter_offset, hoisted_indices, is_innermost, range_counter
from dy2st.backend.numba.support import (
    loop_dtypes,
    python_semantics,
    reads_element,
    representation,
    stores_element,
)
from dy2st.backend.numpy.lowering import defined_outside, loop_comparison
from dy2st.ir.core import Block, Op, Value
from dy2st.ir.opcodes import AS_PYTHON_NUMBER, COND, CONST, DIM, WHILE_LOOP
from dy2st.ir.opdefs import get_op
from dy2st.ir.printer import describe_op
from dy2st.ops.fused import FUSED
from dy2st.ops.indexing import TENSOR_SLOT

OVERFLOW_MESSAGE = (
    "a Python int went beyond 64 bits, which compiled code cannot hold; "
    "run this function with to_static(backend='numpy')"
)

# Helpers the generated functions call, written once into each module (``kernel_cache``). Python
# ints are 64-bit in compiled code: arithmetic that would leave that range raises instead. The
# checks compare before computing: LLVM may assume a signed operation does not overflow, and fold
# a check made on its wrapped result.
PRELUDE = f'''
_OVERFLOW = "{OVERFLOW_MESSAGE}"
_INT64_MIN = -9223372036854775808
_INT64_MAX = 9223372036854775807


@numba.njit(inline="always")
def _python_add(a, b):
    if (b > 0 and a > _INT64_MAX - b) or (b < 0 and a < _INT64_MIN - b):
        raise OverflowError(_OVERFLOW)
    return a + b


@numba.njit(inline="always")
def _python_sub(a, b):
    if (b < 0 and a > _INT64_MAX + b) or (b > 0 and a < _INT64_MIN + b):
        raise OverflowError(_OVERFLOW)
    return a - b


@numba.njit(inline="always")
def _python_mul(a, b):
    if a > 0:
        if (b > 0 and a > _INT64_MAX // b) or (b < 0 and b < _INT64_MIN // a):
            raise OverflowError(_OVERFLOW)
    elif a < 0:
        if (b > 0 and a < _INT64_MIN // b) or (b < 0 and b < _INT64_MAX // a):
            raise OverflowError(_OVERFLOW)
    return a * b


@numba.njit(inline="always")
def _python_lshift(a, b):
    if b < 0:
        raise ValueError("negative shift count")
    if a == 0:
        return a
    if b >= 63 or a > (_INT64_MAX >> b) or a < (_INT64_MIN >> b):
        raise OverflowError(_OVERFLOW)
    return a << b


@numba.njit(inline="always")
def _python_floor_divide(a, b):
    if b == -1 and a == _INT64_MIN:
        raise OverflowError(_OVERFLOW)
    return a // b


@numba.njit(inline="always")
def _python_remainder(a, b):
    if b == -1:
        return a ^ a
    return a % b


@numba.njit(inline="always")
def _python_abs(a):
    if a == _INT64_MIN:
        raise OverflowError(_OVERFLOW)
    return abs(a)


@numba.njit(inline="always")
def _python_rshift(a, b):
    if b < 0:
        raise ValueError("negative shift count")
    if b >= 64:
        return a >> 63
    return a >> b


@numba.njit(inline="always")
def _python_int_checked(a, low, high):
    if a < low or a > high:
        raise OverflowError("Python integer out of bounds for the array's or operand's dtype")
    return a


# NumPy's integer division: by zero gives 0, and the most negative value by -1 wraps around
# (Numba's own would trap). Results are returned as uint64 and cast to the dtype by the caller.
@numba.njit(inline="always")
def _numpy_int_floor_divide(a, b):
    if b == 0:
        return np.uint64(0)
    if b == -1:
        return np.uint64(0) - np.uint64(a)
    return np.uint64(np.floor_divide(a, b))


@numba.njit(inline="always")
def _numpy_int_remainder(a, b):
    if b == 0 or b == -1:
        return np.uint64(0)
    return np.uint64(np.remainder(a, b))


@numba.njit(inline="always")
def _numpy_int_fmod(a, b):
    if b == 0 or b == -1:
        return np.uint64(0)
    return np.uint64(np.fmod(a, b))


@numba.njit(inline="always")
def _numpy_int64_abs(a):
    if a < 0:
        return np.uint64(0) - np.uint64(a)
    return np.uint64(a)


@numba.njit(inline="always")
def _numpy_lshift(a, b, bits):
    if b >= 0 and b < bits:
        return a << b
    return a ^ a


@numba.njit(inline="always")
def _numpy_rshift_signed(a, b, bits):
    if b >= 0 and b < bits:
        return a >> b
    return a >> (bits - 1)


@numba.njit(inline="always")
def _numpy_rshift_unsigned(a, b, bits):
    if b >= 0 and b < bits:
        return a >> b
    return a ^ a
'''

# NumPy's float floor division and remainder (``npy_divmod``), per float type so that every
# constant has the operands' type: Numba's own raise on division by zero and round otherwise
# at infinities.
_FLOAT_DIVMOD = """
@numba.njit(inline="always")
def _numpy_float_divmod_{suffix}(a, b):
    zero = {cast}(0.0)
    one = {cast}(1.0)
    mod = np.fmod(a, b)
    if b == zero:
        return np.divide(a, b), mod
    div = np.divide(a - mod, b)
    if mod != zero:
        if (b < zero) != (mod < zero):
            mod = mod + b
            div = div - one
    else:
        mod = np.copysign(zero, b)
    if div != zero:
        floordiv = np.floor(div)
        if div - floordiv > {cast}(0.5):
            floordiv = floordiv + one
    else:
        floordiv = np.copysign(zero, np.divide(a, b))
    return floordiv, mod
"""
PRELUDE += "".join(_FLOAT_DIVMOD.format(suffix=s, cast=c) for s, c in (("f4", "np.float32"), ("f8", "np.float64")))

_PYTHON_INT_HELPERS = {
    "+": "_python_add",
    "-": "_python_sub",
    "*": "_python_mul",
    "<<": "_python_lshift",
    ">>": "_python_rshift",
    "//": "_python_floor_divide",
    "%": "_python_remainder",
}
# NumPy ufuncs on 64-bit integers computed in uint64, where the result wraps around as NumPy's
# does (LLVM may assume that signed arithmetic never overflows).
_WRAPPING_OPERATORS = {np.add: "+", np.subtract: "-", np.multiply: "*"}
_INTEGER_DIVISIONS = {
    np.floor_divide: "_numpy_int_floor_divide",
    np.remainder: "_numpy_int_remainder",
    np.fmod: "_numpy_int_fmod",
}
_FLOAT_DIVISIONS = {np.floor_divide: 0, np.remainder: 1}
_UNARY = {"-": "-", "+": "+", "~": "~", "not": "not "}


def _dtype_call(dtype: np.dtype) -> str:
    """The NumPy scalar type compiled code casts with (``np.float32``)."""
    return f"np.{np.dtype(dtype).type.__name__}"


def literal(value: Any, dtype: np.dtype, weak: bool) -> str:
    """Source for a constant: a Python literal for a Python number, else the NumPy scalar."""
    python = value.item() if isinstance(value, np.generic) else value
    if isinstance(python, float) and not np.isfinite(python):
        text = "np.nan" if np.isnan(python) else ("np.inf" if python > 0 else "-np.inf")
    elif isinstance(python, complex):
        text = f"complex({literal(python.real, np.dtype(float), True)}, {literal(python.imag, np.dtype(float), True)})"
    else:
        text = repr(python)
    return text if weak else f"{_dtype_call(dtype)}({text})"


def _literal_constant(value: Value) -> Any:
    """The value of a constant a Python literal can write (a Python number), else None."""
    owner = value.owner
    if isinstance(owner, Op) and owner.name == CONST and value.type.ndim == 0:
        constant = owner.attrs["value"]
        if type(constant) in (bool, int, float) and np.isfinite(constant):
            return constant
    return None


class LoopSource:
    """The Numba source of one compiled loop.

    Attributes:
        params: the values the loop reads from outside, in the order the function takes them.
        errors: the message of each error the function may raise -> the op that raises it.
        source: the function's source (``write`` fills it).
    """

    def __init__(self, loop: Op, name: str):
        self.loop = loop
        self.name = name
        self.params: list[Value] = []
        self.errors: dict[str, Op] = {}
        self.names: dict[Value, str] = {}
        self.lines: list[str] = []
        self.counter = 0
        # The counters of the counted loops being emitted, and the (access, axis) indices whose
        # checks were made before the innermost loop being emitted (``bounds``).
        self.counters: set[Value] = set()
        self.unchecked: set[tuple[Op, int]] = set()
        self.source = self.write()

    # --- names -----------------------------------------------------------------------------
    def fresh(self, stem: str = "v") -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def name_of(self, value: Value) -> str:
        """The local holding ``value``; a value from outside the loop becomes a parameter."""
        name = self.names.get(value)
        if name is None:
            constant = _literal_constant(value)
            if constant is not None:  # written out, so that LLVM sees it
                name = self.names[value] = literal(constant, value.type.dtype, value.type.weak)
                return name
            name = self.names[value] = f"p{len(self.params)}"
            self.params.append(value)
        return name

    def converted(self, value: Value, target: np.dtype) -> str:
        """``value`` as ``target``, cast the way NumPy casts it there."""
        text = self.name_of(value)
        constant = _literal_constant(value)
        if constant is not None and value.type.weak and target.kind in "iu" and not isinstance(constant, bool):
            info = np.iinfo(target)
            if info.min <= constant <= info.max:  # in range: NumPy casts without a word
                return f"{_dtype_call(target)}({text})" if target != representation(value) else text
        return self.cast(text, representation(value), target, value.type.weak)

    @staticmethod
    def cast(text: str, source: np.dtype, target: np.dtype, weak: bool = False) -> str:
        if source == target:
            return text
        if weak and source.kind in "iu" and target.kind in "iu" and target != np.int64:
            # NumPy refuses a Python int outside the target's range (OverflowError).
            info = np.iinfo(target)
            return f"{_dtype_call(target)}(_python_int_checked({text}, {info.min}, {info.max}))"
        return f"{_dtype_call(target)}({text})"

    def line(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    # --- the function ------------------------------------------------------------------------
    def write(self) -> str:
        self.emit_loop(self.loop, 1)
        results = "".join(f"{self.names[r]}, " for r in self.loop.results)
        self.line(1, f"return ({results})")
        params = ", ".join(f"p{k}" for k in range(len(self.params)))
        header = ['@numba.njit(cache=CACHE, error_model="python", nogil=True)', f"def {self.name}({params}):"]
        return "\n".join(header + self.lines) + "\n"

    def emit_block(self, block: Block, depth: int, skipped: frozenset[Op] = frozenset()) -> None:
        """The block's ops without its terminator (``pass`` when it emits nothing)."""
        start = len(self.lines)
        for op in block.ops[:-1]:
            if op not in skipped:
                self.emit_op(op, depth)
        if len(self.lines) == start:
            self.line(depth, "pass")

    def emit_op(self, op: Op, depth: int) -> None:
        structure = {CONST: self.emit_const, WHILE_LOOP: self.emit_loop, COND: self.emit_cond, FUSED: self.emit_group}
        emit = structure.get(op.name)
        if emit is not None:
            emit(op, depth)
        else:
            self.emit_computation(op, depth)

    def emit_const(self, op: Op, depth: int) -> None:
        result = op.results[0]
        self.names[result] = literal(op.attrs["value"], result.type.dtype, result.type.weak)

    def emit_group(self, op: Op, depth: int) -> None:
        """A group of scalar ops (a small fused group): its ops, inline."""
        block = op.regions[0].block
        for arg, operand in zip(block.args, op.operands):
            self.names[arg] = self.name_of(operand)
        self.emit_block(block, depth)
        for result, value in zip(op.results, block.ops[-1].operands):
            self.names[result] = self.name_of(value)

    def emit_computation(self, op: Op, depth: int) -> None:
        name = op.name
        if name == DIM:
            self.assign(op, depth, f"{self.name_of(op.operands[0])}.shape[{op.attrs['axis']}]")
        elif name == AS_PYTHON_NUMBER:
            self.assign(op, depth, self.converted(op.operands[0], representation(op.results[0])))
        elif reads_element(op):
            index = self.checked_index(op, depth, first=1)
            self.assign(op, depth, f"{self.name_of(op.operands[0])}[{index}]")
        elif stores_element(op):
            self.emit_store(op, depth)
        else:
            self.assign(op, depth, self.ufunc_call(op))

    def assign(self, op: Op, depth: int, expression: str) -> None:
        name = self.names[op.results[0]] = self.fresh()
        self.line(depth, f"{name} = {expression}")

    # --- elements ------------------------------------------------------------------------------
    def checked_index(self, op: Op, depth: int, first: int) -> str:
        """The subscript of one element, after a check of each index against its axis."""
        array = self.name_of(op.operands[0])
        tensors = iter(op.operands[first:])
        items = []
        for axis, item in enumerate(op.attrs["template"]):
            if item is TENSOR_SLOT:
                index = next(tensors)
                text = self.converted(index, np.dtype(np.int64))
                if not text.isidentifier():
                    text = self.bind(depth, text)
            else:
                text = repr(int(item))
            if (op, axis) in self.unchecked:
                items.append(f"np.uint64({text})")  # known in [0, size): no wrap-around of negatives
                continue
            items.append(text)
            where = f" ({op.loc.short})" if op.loc else ""
            message = f"index out of bounds for axis {axis} in {describe_op(op)}{where}"
            self.errors[message] = op
            size = f"{array}.shape[{axis}]"
            self.line(depth, f"if {text} < -{size} or {text} >= {size}:")
            self.line(depth + 1, f"raise IndexError({message!r})")
        return ", ".join(items)

    def bind(self, depth: int, expression: str) -> str:
        name = self.fresh("i")
        self.line(depth, f"{name} = {expression}")
        return name

    def emit_store(self, op: Op, depth: int) -> None:
        array, value = op.operands[0], op.operands[1]
        index = self.checked_index(op, depth, first=2)
        self.line(depth, f"{self.name_of(array)}[{index}] = {self.converted(value, array.type.dtype)}")
        self.names[op.results[0]] = self.name_of(array)  # updated in place: the same array

    # --- arithmetic ------------------------------------------------------------------------------
    def ufunc_call(self, op: Op) -> str:
        if python_semantics(op):
            return self.python_operator(op)
        ufunc = get_op(op.name).ufunc
        assert ufunc is not None, "support.op_compiles accepts ufunc ops only here"
        dtypes = loop_dtypes(op)
        assert dtypes is not None
        operands = [self.converted(v, d) for v, d in zip(op.operands, dtypes)]
        result = dtypes[-1]
        call = _guarded_form(ufunc, result, operands) or f"np.{ufunc.__name__}({', '.join(operands)})"
        return f"{_dtype_call(result)}({call})"

    def python_operator(self, op: Op) -> str:
        """Python's operator on the eager code's Python numbers, with Python's semantics."""
        symbol = op.attrs["python_operator"]
        result = representation(op.results[0])
        names = [self.name_of(v) for v in op.operands]
        if len(names) == 1:
            if result.kind == "i" and symbol in ("-", "abs"):
                operand = self.converted(op.operands[0], np.dtype(np.int64))
                return f"_python_sub(0, {operand})" if symbol == "-" else f"_python_abs({operand})"
            return f"abs({names[0]})" if symbol == "abs" else f"({_UNARY[symbol]}{names[0]})"
        a, b = names
        if (
            result.kind == "i"
            and symbol in "+-"
            and any(counter_offset(op.results[0], c) is not None for c in self.counters)
        ):
            return f"({a} {symbol} {b})"  # a loop counter plus a small literal: far from overflowing
        if result.kind == "i" and symbol in _PYTHON_INT_HELPERS:
            a, b = (self.converted(v, np.dtype(np.int64)) for v in op.operands)
            return f"{_PYTHON_INT_HELPERS[symbol]}({a}, {b})"
        return f"({a} {symbol} {b})"

    # --- control flow ------------------------------------------------------------------------
    def emit_cond(self, op: Op, depth: int) -> None:
        results = [self.fresh("r") for _ in op.results]
        self.line(depth, f"if {self.name_of(op.operands[0])}:")
        for k, region in enumerate(op.regions):
            if k == 1:
                self.line(depth, "else:")
            self.emit_block(region.block, depth + 1)
            self.rebind(results, op.results, region.block.ops[-1].operands, depth + 1)
        for value, name in zip(op.results, results):
            self.names[value] = name

    def rebind(self, names: list[str], targets: list[Value], values: list[Value], depth: int) -> None:
        """``a, b = x, y`` for the names whose values change, each cast to its target's dtype."""
        pairs = [
            (name, self.converted(value, representation(target))) for name, target, value in zip(names, targets, values)
        ]
        changed = [(name, text) for name, text in pairs if name != text]
        if changed:
            self.line(depth, f"{', '.join(n for n, _ in changed)} = {', '.join(t for _, t in changed)}")

    def emit_loop(self, op: Op, depth: int) -> None:
        cond_block, body_block = op.regions[0].block, op.regions[1].block
        carried = [self.fresh("w") for _ in op.operands]
        counted = range_counter(op)
        others = [k for k in range(len(carried)) if k != counted]
        self.rebind(
            [carried[k] for k in others], [op.results[k] for k in others], [op.operands[k] for k in others], depth
        )
        for block in (cond_block, body_block):
            for value, name in zip(block.args, carried):
                self.names[value] = name
        yielded = body_block.ops[-1].operands
        if counted is None:
            self.line(depth, "while True:")
            self.emit_block(cond_block, depth + 1)
            self.line(depth + 1, f"if not {self.name_of(cond_block.ops[-1].operands[0])}:")
            self.line(depth + 2, "break")
            self.emit_block(body_block, depth + 1)
            self.rebind(carried, list(op.results), list(yielded), depth + 1)
        else:
            self.emit_counted(op, carried, counted, depth)
        for value, name in zip(op.results, carried):
            self.names[value] = name

    def emit_counted(self, op: Op, carried: list[str], counted: int, depth: int) -> None:
        """``for w in range(start, bound)``, as the NumPy tier runs a counted loop; the counter ends
        at the bound (or the start, for a loop that never runs), as the while loop leaves it."""
        cond_block, body_block = op.regions[0].block, op.regions[1].block
        compare = loop_comparison(cond_block)
        assert compare is not None, "a counted loop's condition is its comparison"
        start = self.converted(op.operands[counted], np.dtype(np.int64))
        bound = self.bind(depth, self.converted(compare.operands[1], np.dtype(np.int64)))
        if not start.isidentifier():
            start = self.bind(depth, start)
        counter = carried[counted]
        self.counters.add(body_block.args[counted])
        hoisted = self.hoisted_checks(op, counted, start, bound) if is_innermost(op) else None
        if hoisted is None:
            self.emit_range_loop(op, carried, counted, start, bound, depth)
        else:
            condition, indices = hoisted
            self.line(depth, f"if {bound} <= {start} or ({condition}):")
            self.unchecked |= indices
            self.emit_range_loop(op, carried, counted, start, bound, depth + 1)
            self.unchecked -= indices
            self.line(depth, "else:")
            self.emit_range_loop(op, carried, counted, start, bound, depth + 1)
        self.line(depth, f"{counter} = {bound} if {bound} > {start} else {start}")

    def emit_range_loop(self, op: Op, carried: list[str], counted: int, start: str, bound: str, depth: int) -> None:
        """``for w in range(start, bound)`` and the body; the increment the body yields for the
        counter is computed as written (other ops may read it) and left unused."""
        body_block = op.regions[1].block
        self.line(depth, f"for {carried[counted]} in range({start}, {bound}):")
        self.emit_block(body_block, depth + 1)
        others = [k for k in range(len(carried)) if k != counted]
        yielded = body_block.ops[-1].operands
        self.rebind(
            [carried[k] for k in others], [op.results[k] for k in others], [yielded[k] for k in others], depth + 1
        )

    def hoisted_checks(self, loop: Op, counted: int, start: str, bound: str) -> tuple[str, set[tuple[Op, int]]] | None:
        """The test, made before the innermost loop, that every hoistable index is in bounds at
        every iteration, and the indices it covers; None when there are none."""
        tests: list[str] = []
        covered: set[tuple[Op, int]] = set()
        body = loop.regions[1].block
        for index in hoisted_indices(loop, counted):
            size = self.size_before(index.access.operands[0], index.axis, body)
            if size is None:
                continue
            tests.append(self.in_bounds_test(index, size, start, bound))
            covered.add((index.access, index.axis))
        return (" and ".join(dict.fromkeys(tests)), covered) if tests else None

    def in_bounds_test(self, index: HoistedIndex, size: str, start: str, bound: str) -> str:
        if index.literal is not None:
            return f"{index.literal} >= 0 and {index.literal} < {size}"
        if index.value is not None:
            name = self.converted(index.value, np.dtype(np.int64))
            return f"{name} >= 0 and {name} < {size}"
        return f"{start} + {index.offset} >= 0 and {bound} - 1 + {index.offset} < {size}"

    def size_before(self, array: Value, axis: int, body: Block) -> str | None:
        """Source for the size of ``array``'s axis that is valid before the loop: the static size,
        or the size of the array it updates in place, named outside the loop (None if neither)."""
        size = array.type.shape[axis]
        if isinstance(size, int):
            return repr(size)
        while isinstance(array.owner, Op) and stores_element(array.owner):
            array = array.owner.operands[0]
        if array in body.args or defined_outside(array, body):
            return f"{self.name_of(array)}.shape[{axis}]"
        return None


def _guarded_form(ufunc: np.ufunc, result: np.dtype, operands: list[str]) -> str | None:
    """The source computing ``ufunc`` where Numba's own ufunc would differ from NumPy's (integer
    overflow, division by zero, shifts by the width or more), else None."""
    if result.kind in "iu":
        wide = result.itemsize == 8
        unsigned = [f"np.uint64({o})" for o in operands]
        if wide and ufunc in _WRAPPING_OPERATORS:
            return f" {_WRAPPING_OPERATORS[ufunc]} ".join(unsigned)
        if wide and ufunc is np.square:
            return f"{unsigned[0]} * {unsigned[0]}"
        if wide and ufunc is np.negative:
            return f"np.uint64(0) - {unsigned[0]}"
        if wide and ufunc is np.absolute and result.kind == "i":
            return f"_numpy_int64_abs({operands[0]})"
        if ufunc in _INTEGER_DIVISIONS:
            return f"{_INTEGER_DIVISIONS[ufunc]}({operands[0]}, {operands[1]})"
        bits = result.itemsize * 8
        if ufunc is np.left_shift:
            return f"_numpy_lshift({unsigned[0] if wide else operands[0]}, {operands[1]}, {bits})"
        if ufunc is np.right_shift:
            signed = "unsigned" if result.kind == "u" else "signed"
            return f"_numpy_rshift_{signed}({operands[0]}, {operands[1]}, {bits})"
    if result.kind == "f" and ufunc in _FLOAT_DIVISIONS:
        return f"_numpy_float_divmod_f{result.itemsize}({operands[0]}, {operands[1]})[{_FLOAT_DIVISIONS[ufunc]}]"
    return None
