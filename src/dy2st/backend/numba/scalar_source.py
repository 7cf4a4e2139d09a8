"""Scalar code in Numba source, with NumPy's semantics: the part of the compiled tier's code
generation that loops (``loop_source``) and fused elementwise kernels (``fused_source``) share.

Every value has the dtype NumPy gives it: each ufunc's operands are cast to the dtypes of the
loop NumPy itself resolves (``support.loop_dtypes``) and its result to that loop's output dtype,
so Numba's own promotion rules never decide a type. Where Numba's arithmetic differs from
NumPy's (integer division by zero, 64-bit wrap-around, wide shifts, float floor division at
zero and infinities) or from Python's (ints beyond 64 bits), ``PRELUDE``'s helpers compute it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dy2st.backend.numba.bounds import counter_offset
from dy2st.backend.numba.extremes import EXTREMES_PRELUDE
from dy2st.backend.numba.support import loop_dtypes, python_semantics, python_truth_test, representation
from dy2st.backend.numba.vector_math import VECTOR_MATH_PRELUDE, vector_array_call, vector_call
from dy2st.ir.core import Op, Value
from dy2st.ir.opcodes import CONST
from dy2st.ir.opdefs import get_op

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
    r = a % b  # Python's floor remainder; fmod's has the dividend's sign
    if r != 0 and (r < 0) != (a < 0):
        r = r - b
    return np.uint64(r)


# NumPy's maximum and minimum give the second argument when both compare equal (0.0 and -0.0),
# fmax and fmin the first; NaN propagates through the first two and is skipped by the others.
@numba.njit(inline="always")
def _numpy_maximum(a, b):
    if a != a:
        return a
    if b != b:
        return b
    return a if a > b else b


@numba.njit(inline="always")
def _numpy_minimum(a, b):
    if a != a:
        return a
    if b != b:
        return b
    return a if a < b else b


@numba.njit(inline="always")
def _numpy_fmax(a, b):
    if b != b:
        return a
    if a != a:
        return b
    return a if a >= b else b


@numba.njit(inline="always")
def _numpy_fmin(a, b):
    if b != b:
        return a
    if a != a:
        return b
    return a if a <= b else b


@numba.njit(inline="always")
def _numpy_sign(a):
    if a > 0:
        return 1.0
    if a < 0:
        return -1.0
    if a == 0:
        return 0.0  # NumPy's sign of -0.0 is +0.0
    return np.float64(a)


@numba.njit(inline="always")
def _numpy_pairwise_block(a, start, n, zero):
    # NumPy's pairwise summation of at most 128 elements a[start:start + n] (its loops_utils.h):
    # eight running sums, then the rest one by one.
    if n < 8:
        res = zero
        for i in range(start, start + n):
            res += a[i]
        return res
    r0 = a[start]
    r1 = a[start + 1]
    r2 = a[start + 2]
    r3 = a[start + 3]
    r4 = a[start + 4]
    r5 = a[start + 5]
    r6 = a[start + 6]
    r7 = a[start + 7]
    i = 8
    while i < n - (n % 8):
        p = start + i
        r0 += a[p]
        r1 += a[p + 1]
        r2 += a[p + 2]
        r3 += a[p + 3]
        r4 += a[p + 4]
        r5 += a[p + 5]
        r6 += a[p + 6]
        r7 += a[p + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[start + i]
        i += 1
    return res


@numba.njit
def _numpy_pairwise_sum(a, start, n, zero):
    # NumPy's pairwise summation of a[start:start + n], operation for operation: np.sum of a 1-d
    # float array gives these bits, whatever its stride. NumPy splits a run of more than 128
    # elements in two halves (the first a multiple of 8) and adds their sums; this walks that
    # tree with a stack of its own (Numba's disk cache crashes on recursive functions).
    if n <= 128:
        return _numpy_pairwise_block(a, start, n, zero)
    starts = np.empty(64, np.int64)
    sizes = np.empty(64, np.int64)
    states = np.zeros(64, np.int64)  # 0: split next, 1: left half summed, 2: both halves summed
    lefts = np.empty(64, a.dtype)
    top = 0
    starts[0] = start
    sizes[0] = n
    value = zero
    while True:
        size = sizes[top]
        half = size // 2
        half -= half % 8
        if size <= 128:
            value = _numpy_pairwise_block(a, starts[top], size, zero)
            top -= 1
            continue
        if states[top] == 0:
            states[top] = 1
            starts[top + 1] = starts[top]
            sizes[top + 1] = half
            states[top + 1] = 0
            top += 1
            continue
        if states[top] == 1:
            lefts[top] = value
            states[top] = 2
            starts[top + 1] = starts[top] + half
            sizes[top + 1] = size - half
            states[top + 1] = 0
            top += 1
            continue
        value = lefts[top] + value
        top -= 1
        if top < 0:
            return value


@numba.njit(inline="always")
def _numpy_sum(a, zero):
    # NumPy's result starts at add's identity, 0.0, and the pairwise sum is added to it: a sum of
    # eight or more -0.0 is 0.0, as in NumPy.
    return zero + _numpy_pairwise_sum(a, 0, a.shape[0], zero)


@numba.njit(inline="always")
def _numpy_mean(a, zero):
    # np.mean: the sum divided by an intp count, in float64 (the caller rounds float32's back).
    if a.shape[0] == 0:
        return np.nan  # NumPy warns "Mean of empty slice"; compiled code does not warn
    return np.float64(_numpy_sum(a, zero)) / np.float64(a.shape[0])


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
PRELUDE += EXTREMES_PRELUDE
PRELUDE += VECTOR_MATH_PRELUDE

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


def dtype_call(dtype: np.dtype) -> str:
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
    return text if weak else f"{dtype_call(dtype)}({text})"


def _literal_constant(value: Value) -> Any:
    """The value of a constant a Python literal can write (a Python number), else None."""
    owner = value.owner
    if isinstance(owner, Op) and owner.name == CONST and value.type.ndim == 0:
        constant = owner.attrs["value"]
        if type(constant) in (bool, int, float) and np.isfinite(constant):
            return constant
    return None


class ScalarSource:
    """Names, casts and scalar operations of one generated Numba function.

    Attributes:
        params: the values the function reads from outside, in the order it takes them.
        errors: the message of each error the function may raise -> the op that raises it.
        per_element: the code computes each array op on one element at a time (a fused group's
            loop), so array values are scalars there.
    """

    per_element = False

    def __init__(self) -> None:
        self.params: list[Value] = []
        self.errors: dict[str, Op] = {}
        self.names: dict[Value, str] = {}
        self.lines: list[str] = []
        self.counter = 0
        # The counters of the counted loops being emitted (``i + 1`` of one needs no overflow check).
        self.counters: set[Value] = set()

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
                return f"{dtype_call(target)}({text})" if target != representation(value) else text
        return self.cast(text, representation(value), target, value.type.weak)

    @staticmethod
    def cast(text: str, source: np.dtype, target: np.dtype, weak: bool = False) -> str:
        if source == target:
            return text
        if weak and source.kind in "iu" and target.kind in "iu" and target != np.int64:
            # NumPy refuses a Python int outside the target's range (OverflowError).
            info = np.iinfo(target)
            return f"{dtype_call(target)}(_python_int_checked({text}, {info.min}, {info.max}))"
        return f"{dtype_call(target)}({text})"

    def line(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def bind(self, depth: int, expression: str) -> str:
        name = self.fresh("i")
        self.line(depth, f"{name} = {expression}")
        return name

    def assign(self, op: Op, depth: int, expression: str) -> None:
        name = self.names[op.results[0]] = self.fresh()
        self.line(depth, f"{name} = {expression}")

    def emit_const(self, op: Op, depth: int) -> None:
        result = op.results[0]
        self.names[result] = literal(op.attrs["value"], result.type.dtype, result.type.weak)

    def ufunc_call(self, op: Op, per_element: bool = False) -> str:
        """Source computing a ufunc op: on its arrays (Numba's array ufunc), or on scalars with
        NumPy's semantics, 0-d values and, ``per_element``, single elements of array operands."""
        if python_truth_test(op):
            return f"({self.name_of(op.operands[0])} != 0)"
        if python_semantics(op):
            return self.python_operator(op)
        ufunc = get_op(op.name).ufunc
        assert ufunc is not None, "support.op_compiles accepts ufunc ops only here"
        dtypes = loop_dtypes(op)
        assert dtypes is not None
        if op.results[0].type.ndim and not per_element:
            # On arrays (real floats, of the loop's dtypes: ``support._array_ufunc``), Numba runs
            # NumPy's loop itself; scalar operands are cast to its dtype.
            arguments = [self.name_of(v) if v.type.ndim else self.converted(v, d) for v, d in zip(op.operands, dtypes)]
            # A math function of our own (``vector_math``) where there is one: vectorized.
            own_call = vector_call if self.per_element else vector_array_call
            own = own_call(ufunc, dtypes[0], arguments[0]) if len(arguments) == 1 else None
            return own or f"np.{ufunc.__name__}({', '.join(arguments)})"
        operands = [self.converted(v, d) for v, d in zip(op.operands, dtypes)]
        result = dtypes[-1]
        own = vector_call(ufunc, dtypes[0], operands[0]) if len(operands) == 1 else None
        call = _guarded_form(ufunc, result, operands) or own or f"np.{ufunc.__name__}({', '.join(operands)})"
        return f"{dtype_call(result)}({call})"

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


_FLOAT_HELPERS = {
    np.maximum: "_numpy_maximum",
    np.minimum: "_numpy_minimum",
    np.fmax: "_numpy_fmax",
    np.fmin: "_numpy_fmin",
    np.sign: "_numpy_sign",
}


def _guarded_form(ufunc: np.ufunc, result: np.dtype, operands: list[str]) -> str | None:
    """The source computing ``ufunc`` where Numba's own ufunc would differ from NumPy's (integer
    overflow, division by zero, shifts by the width or more, signed zeros), else None."""
    if result.kind in "iu":
        return _integer_form(ufunc, result, operands)
    if result.kind == "f" and ufunc in _FLOAT_DIVISIONS:
        return f"_numpy_float_divmod_f{result.itemsize}({operands[0]}, {operands[1]})[{_FLOAT_DIVISIONS[ufunc]}]"
    if result.kind == "f" and ufunc in _FLOAT_HELPERS:
        return f"{_FLOAT_HELPERS[ufunc]}({', '.join(operands)})"
    return None


def _integer_form(ufunc: np.ufunc, result: np.dtype, operands: list[str]) -> str | None:
    """``_guarded_form`` for integer results: 64-bit arithmetic in uint64, which wraps."""
    if ufunc is np.sign and result.kind == "u":
        return f"{operands[0]} != 0"  # Numba's sign of an unsigned int can be -1
    if ufunc in _INTEGER_DIVISIONS:
        return f"{_INTEGER_DIVISIONS[ufunc]}({operands[0]}, {operands[1]})"
    wide = result.itemsize == 8
    unsigned = [f"np.uint64({o})" for o in operands]
    bits = result.itemsize * 8
    if ufunc is np.left_shift:
        return f"_numpy_lshift({unsigned[0] if wide else operands[0]}, {operands[1]}, {bits})"
    if ufunc is np.right_shift:
        signed = "unsigned" if result.kind == "u" else "signed"
        return f"_numpy_rshift_{signed}({operands[0]}, {operands[1]}, {bits})"
    if not wide:
        return None  # computed in int64 by Numba, then cast: the same wrap-around
    if ufunc in _WRAPPING_OPERATORS:
        return f" {_WRAPPING_OPERATORS[ufunc]} ".join(unsigned)
    if ufunc is np.square:
        return f"{unsigned[0]} * {unsigned[0]}"
    if ufunc is np.negative:
        return f"np.uint64(0) - {unsigned[0]}"
    if ufunc is np.absolute and result.kind == "i":
        return f"_numpy_int64_abs({operands[0]})"
    return None
