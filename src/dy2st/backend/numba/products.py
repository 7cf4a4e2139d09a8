"""Small matrix products inside compiled loops, written out as loops into a given array.

``np.dot`` in compiled code calls BLAS and allocates its result: about 110-170 ns for a product of
a 32-vector and a 32x32 matrix, most of it the call, where loops over the elements take 62 ns
(medians on this 2-core machine). Products below the crossover sizes measured against ``np.dot``
(``INLINE_MOST``) are written out; larger ones keep ``np.dot`` and its BLAS. Each element is
summed in the natural order, ``((a0 * b0 + a1 * b1) + a2 * b2) + ...``, without fused
multiply-adds (Numba does not contract without fast-math): within the error bound of NumPy's
(BLAS) summation, the compiled tier's contract for products and reductions. Integer products
wrap around as NumPy's do: computed in uint64 and cast to the dtype.

The loop orders keep that summation order and let LLVM vectorize: a vector times a matrix and a
matrix times a matrix add scaled rows of the right operand into the result row; a matrix times a
vector sums eight rows at once (eight independent sums), as the rows of the left operand are
contiguous and each element's sum is one dependent chain.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dy2st.ir.core import Op

VECTOR_MATRIX, MATRIX_VECTOR, MATRIX_MATRIX, VECTOR_VECTOR = "vm", "mv", "mm", "vv"

# The most multiply-adds a product is written out for, per form: above them np.dot (BLAS) was
# faster. Measured in compiled loops (medians, ns per product, float64, loops against np.dot):
# vector @ matrix 20/127 at 16x16, 62/152 at 32x32, 206/271 at 64x64 (larger sizes were not
# measured); matrix @ vector 41/131 at 16x16, 135/165 at 32x32, 938/294 at 64x64; matrix @
# matrix 77/182 at 8x8x8, 325/299 at 12x12x12, 397/412 at 16x16x16, 1092/850 at 24x24x24.
INLINE_MOST = {VECTOR_MATRIX: 4096, MATRIX_VECTOR: 1024, MATRIX_MATRIX: 2048}

# The most multiply-adds ``c + a @ b`` (``add_matmul``) is written out for, adding into ``c``;
# above, ``c += np.dot(a, b)`` (BLAS, and an array for the product). Measured in compiled loops
# adding a transposed block of 32 rows times 32 rows into an n x n sum (medians, us, loops/BLAS):
# 0.80/0.78 at n=16, 1.48/1.84 at 32, 4.13/5.79 at 64, 54.2/14.2 at 128.
ACCUMULATE_INLINE_MOST = 131072

# How many rows of the left operand a matrix @ vector product sums at once (eight independent
# sums: 135 ns against 149 ns for four at 32x32, 938 against 1412 at 64x64).
_ROWS_AT_ONCE = 8
# How many scaled rows of the right operand a vector @ matrix (or matrix @ matrix) product adds
# in one pass over the result row: 62 ns against 101 ns adding one at a time, at 32x32.
_ROWS_ADDED_AT_ONCE = 8


def product_form(op: Op) -> str:
    """The form of a matrix product: by the dimensions of its operands (1-d or 2-d each)."""
    a, b = (v.type.ndim for v in op.operands)
    return {(1, 2): VECTOR_MATRIX, (2, 1): MATRIX_VECTOR, (2, 2): MATRIX_MATRIX, (1, 1): VECTOR_VECTOR}[(a, b)]


def multiply_adds(op: Op) -> int | None:
    """The product's count of multiply-adds where its sizes are static, else None: the left
    operand's sizes times the right operand's last (of a matrix)."""
    a, b = (v.type.shape for v in op.operands)
    sizes = [*a, *(b[1:] if len(b) == 2 else ())]
    if not all(isinstance(size, int) for size in sizes):
        return None
    count = 1
    for size in sizes:
        count *= size
    return count


def written_out(op: Op, strided: bool) -> bool | None:
    """Is the product written out as loops (True), left to ``np.dot`` (False), or decided at run
    time by its sizes (None)? Integer products are always written out (BLAS has none). Float
    products of two contiguous vectors keep ``np.dot``, which gives NumPy's bits and allocates
    nothing; of ``strided`` ones (a column, a reversed vector), which NumPy sums with BLAS's
    strided routine or a plain loop and Numba's ``np.dot`` would copy first, are written out."""
    form = product_form(op)
    if op.results[0].type.dtype.kind in "iu":
        return True
    if form == VECTOR_VECTOR:
        return strided
    count = multiply_adds(op)
    return None if count is None else count <= INLINE_MOST[form]


def inline_test(form: str, a: str, b: str) -> str:
    """The run-time test, for sizes only known then, that the product is written out."""
    if form == VECTOR_MATRIX:
        count = f"{b}.shape[0] * {b}.shape[1]"
    elif form == MATRIX_VECTOR:
        count = f"{a}.shape[0] * {a}.shape[1]"
    else:
        count = f"{a}.shape[0] * {a}.shape[1] * {b}.shape[1]"
    return f"{count} <= {INLINE_MOST[form]}"


def result_shape(form: str, a: str, b: str) -> list[str]:
    """The sizes of the product of arrays named ``a`` and ``b``, as source."""
    return {
        VECTOR_MATRIX: [f"{b}.shape[1]"],
        MATRIX_VECTOR: [f"{a}.shape[0]"],
        MATRIX_MATRIX: [f"{a}.shape[0]", f"{b}.shape[1]"],
        VECTOR_VECTOR: [],
    }[form]


class ProductWriter:
    """The loops computing one product into an array: ``lines`` at indent 0, loop names from
    ``fresh``.

    Args:
        form: the product's form (``product_form``).
        dtype: its result's dtype, which its operands have too.
        fresh: makes a new local name from a stem.
        accumulate: add the product to the array's elements (``add_matmul``), each element's
            terms added to it in the natural order, instead of overwriting them.
    """

    def __init__(self, form: str, dtype: np.dtype, fresh: Callable[[str], str], accumulate: bool = False):
        self.accumulate = accumulate
        self.form = form
        self.dtype = np.dtype(dtype)
        self.fresh = fresh
        self.lines: list[str] = []
        self.integer = self.dtype.kind in "iu"

    def line(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    @property
    def zero(self) -> str:
        return "np.uint64(0)" if self.integer else f"np.{self.dtype.type.__name__}(0.0)"

    def term(self, x: str, y: str) -> str:
        """The product of two elements, in the accumulator's arithmetic."""
        return f"np.uint64({x}) * np.uint64({y})" if self.integer else f"{x} * {y}"

    def stored(self, accumulated: str) -> str:
        """An accumulated value as the result's dtype (integers wrap around)."""
        return f"np.{self.dtype.type.__name__}({accumulated})" if self.integer else accumulated

    def plus(self, element: str, term: str) -> str:
        """``element + term`` for an element of the result, in the accumulator's arithmetic."""
        return self.stored(f"np.uint64({element}) + {term}") if self.integer else f"{element} + {term}"

    def write(self, a: str, b: str, out: str) -> list[str]:
        """Lines computing ``a @ b`` into ``out`` (a local for two vectors, else an array)."""
        {
            VECTOR_MATRIX: self.vector_matrix,
            MATRIX_VECTOR: self.matrix_vector,
            MATRIX_MATRIX: self.matrix_matrix,
            VECTOR_VECTOR: self.vector_vector,
        }[self.form](a, b, out)
        return self.lines

    def add_scaled_rows(self, a_row: str, b: str, out_row: str, depth: int) -> None:
        """``out_row = sum over k of a_row[k] * b[k]``, rows of ``b`` added in order: float rows
        ``_ROWS_ADDED_AT_ONCE`` at a time, ``((out + a0 * b0) + a1 * b1) + ...`` in one statement
        (the same sums, the result row read and written once for them)."""
        k, j = self.fresh("k"), self.fresh("j")
        if not self.accumulate:
            self.line(depth, f"for {j} in range({b}.shape[1]):")
            self.line(depth + 1, f"{out_row.format(j)} = np.{self.dtype.type.__name__}(0)")
        at_once = 1 if self.integer else _ROWS_ADDED_AT_ONCE
        self.line(depth, f"{k} = 0")
        if at_once > 1:
            self.line(depth, f"while {k} + {at_once} <= {b}.shape[0]:")
            self.add_rows(a_row, b, out_row, k, at_once, depth + 1)
        self.line(depth, f"while {k} < {b}.shape[0]:")
        self.add_rows(a_row, b, out_row, k, 1, depth + 1)

    def add_rows(self, a_row: str, b: str, out_row: str, k: str, count: int, depth: int) -> None:
        """Add ``count`` scaled rows of ``b`` from row ``k`` on, then step ``k`` past them."""
        j = self.fresh("j")
        scales = [self.fresh("a") for _ in range(count)]
        for offset, scale in enumerate(scales):
            self.line(depth, f"{scale} = {a_row.format(f'{k} + {offset}' if offset else k)}")
        self.line(depth, f"for {j} in range({b}.shape[1]):")
        total = out_row.format(j)
        for offset, scale in enumerate(scales):
            row = f"{k} + {offset}" if offset else k
            total = self.plus(total, self.term(scale, f"{b}[{row}, {j}]"))
            if offset < count - 1:
                total = f"({total})"
        self.line(depth + 1, f"{out_row.format(j)} = {total}")
        self.line(depth, f"{k} += {count}")

    def vector_matrix(self, a: str, b: str, out: str) -> None:
        self.add_scaled_rows(f"{a}[{{}}]", b, f"{out}[{{}}]", 0)

    def matrix_matrix(self, a: str, b: str, out: str) -> None:
        i = self.fresh("i")
        self.line(0, f"for {i} in range({a}.shape[0]):")
        self.add_scaled_rows(f"{a}[{i}, {{}}]", b, f"{out}[{i}, {{}}]", 1)

    def matrix_vector(self, a: str, b: str, out: str) -> None:
        i, k = self.fresh("i"), self.fresh("k")
        sums = [self.fresh("s") for _ in range(_ROWS_AT_ONCE)]
        self.line(0, f"{i} = 0")
        self.line(0, f"while {i} + {_ROWS_AT_ONCE} <= {a}.shape[0]:")
        self.line(1, f"{', '.join(sums)} = {', '.join([self.zero] * len(sums))}")
        self.line(1, f"for {k} in range({a}.shape[1]):")
        element = self.fresh("x")
        self.line(2, f"{element} = {b}[{k}]")
        for row, total in enumerate(sums):
            self.line(2, f"{total} = {total} + {self.term(f'{a}[{i} + {row}, {k}]', element)}")
        for row, total in enumerate(sums):
            self.line(1, f"{out}[{i} + {row}] = {self.stored(total)}")
        self.line(1, f"{i} += {_ROWS_AT_ONCE}")
        self.line(0, f"while {i} < {a}.shape[0]:")
        self.line(1, f"{sums[0]} = {self.zero}")
        self.line(1, f"for {k} in range({a}.shape[1]):")
        self.line(2, f"{sums[0]} = {sums[0]} + {self.term(f'{a}[{i}, {k}]', f'{b}[{k}]')}")
        self.line(1, f"{out}[{i}] = {self.stored(sums[0])}")
        self.line(1, f"{i} += 1")

    def vector_vector(self, a: str, b: str, out: str) -> None:
        k, total = self.fresh("k"), self.fresh("s")
        self.line(0, f"{total} = {self.zero}")
        self.line(0, f"for {k} in range({a}.shape[0]):")
        self.line(1, f"{total} = {total} + {self.term(f'{a}[{k}]', f'{b}[{k}]')}")
        self.line(0, f"{out} = {self.stored(total)}")
