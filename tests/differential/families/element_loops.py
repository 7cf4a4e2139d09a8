"""Element loops as NumPy users write Numba-style kernels: one element at a time.

``for i in range(len(x))``, ``range(1, n)``, reversed and strided ranges, and nested ``i``/``j``
loops over the elements of a matrix; scalar accumulators (Python ints and floats, and NumPy scalars
taken from the arrays, whose dtype they keep); element reads at negative and computed indices
(``x[i - 1]``, ``x[-1 - i]``, ``A[i, j]``) and element writes (``y[i] = ...``, ``A[i, j] += ...``,
``x[i] = x[i - 1] * 0.5 + x[i]``); integer arithmetic that wraps around on ``int8``/``uint8``
elements combined with Python ints (``& | ^ << >> // %``, by values that may be zero, negative or
wider than the dtype); float math on elements (``np.sqrt``, ``np.exp``, ``np.tanh``, ``abs``, the
``max``/``min`` builtins, whose result depends on the order of a NaN operand, ``np.maximum``);
if/elif/else, ``break`` and ``continue`` on element values; ``while`` loops whose trip counts
depend on the data (insertion sort, Newton iterations, Collatz and popcount loops); and now and
then an index one past the end, for which eager NumPy raises IndexError. Array work as such kernels
hold it: sums, means, maxima and minima of parts of the vectors, math functions on them,
products of rows, gathers by integer vectors (``x[cols[a:b]]``, sparse kernels' idiom), sums
over axes of the matrix and of products, and whole-array updates of the arguments (``x -= 0.25 *
(x - y)``, ``A -= A[0] * 2``).

The arguments are a float vector ``x`` (float64 or float32, with NaN and infinities at times), an
integer vector ``b`` of the same length (int64, int32, int8 or uint8, with zeros), a small matrix
``A`` (float or integer) and a boolean vector ``q``. Every call of one program gets the same
dtypes and shapes (one graph per program); the length is 4..12, the matrix 3..4 by 3..4, so
counters of the matrix's loops index the vectors too.
"""

from __future__ import annotations

import numpy as np

from ..skeleton import indent
from .base import Call, Family, grid, python_int, trip_count

FLOAT_DTYPES = [np.float64, np.float64, np.float32]
INT_DTYPES = [np.int64, np.int32, np.int8, np.uint8, np.uint8, np.int8]
MATRIX_DTYPES = [np.float64, np.float64, np.float32, np.int64, np.int32, np.int8]

VECTOR, ROW, COLUMN, DIAGONAL = "n", "r", "c", "m"  # what a counter is below: len(x), rows, columns, both
RETURNS = [
    "x, s",
    "y, t",
    "b, h",
    "A, s, cnt",
    "s, t, idx",
    "lo, y",
    "t, h, cnt, idx",
    "y, b, t",
    "s + t, q",
    "x, y, A",
    "h, lo",
    "cnt, b",
]


class ElementLoops(Family):
    name = "element_loops"
    summary = (
        "Numba-style element loops: x[i], A[i, j], scalar accumulators, int8/uint8 wrap-around, data-dependent whiles"
    )
    parameters = "x, b, A, q, k, p"

    def __init__(self, generator):
        super().__init__(generator)
        self.returned = self.pick(RETURNS)
        self.counters: list[tuple[str, str]] = []  # the element loops around what is being generated

    def setup(self) -> list[str]:
        return [
            "n = len(x)",
            "y = np.zeros_like(x)",
            "s = 0.0",
            "t = 0",
            "h = b[0] * 0",  # a NumPy scalar of b's dtype
            "lo = x[0]",
            "cnt = 0",
            "idx = -1",
        ]

    # indices ------------------------------------------------------------------------------------
    def _counter(self, kinds: str) -> str | None:
        names = [name for name, kind in self.counters if kind in kinds]
        return self.pick(names) if names and self.rng.random() < 0.8 else None

    def vi(self, scope) -> str:
        """An index into the vectors (length n >= 4)."""
        i = self._counter(VECTOR + ROW + COLUMN + DIAGONAL)
        if i is None:
            return self.pick([*scope.indices(), "0", "1", "2", "3", "-1", "-2"])
        if self.rng.random() < 0.02:
            return f"{i} + 1"  # one past the end in a loop over the whole vector: IndexError
        return self.pick([i, i, i, f"{i} - 1", f"-1 - {i}", f"({i} + 1) % n", f"{i} // 2"])

    def ri(self, scope) -> str:
        """An index into the rows of A (3 or 4)."""
        i = self._counter(ROW + DIAGONAL)
        if i is None:
            return self.pick([*scope.indices(), "0", "1", "2", "-1"])
        return self.pick([i, i, f"{i} - 1", f"-1 - {i}"])

    def ci(self, scope) -> str:
        """An index into the columns of A (3 or 4)."""
        j = self._counter(COLUMN + DIAGONAL)
        if j is None:
            return self.pick([*scope.indices(), "0", "1", "2", "-1"])
        return self.pick([j, j, f"{j} - 1", f"-1 - {j}"])

    def inner(self, scope, *counters: tuple[str, str]) -> list[str]:
        """A skeleton block inside element loops over ``counters``."""
        self.counters.extend(counters)
        try:
            return self.block(scope.nested(in_loop=True))
        finally:
            del self.counters[len(self.counters) - len(counters) :]

    def small(self) -> str:
        """A Python int that fits in every integer dtype of ``b`` (int8 and uint8 too)."""
        return self.pick(["1", "3", "7", "100", "127"])

    # leaves -------------------------------------------------------------------------------------
    def statement(self, scope) -> list[str]:
        knobs = self.generator.knobs
        if knobs.tensor_conditions and scope.depth < knobs.max_depth - 1 and self.rng.random() < 0.3:
            return self.idiom(scope)  # element loops are the point: more of them than the skeleton makes
        v, w = self.vi(scope), self.vi(scope)
        r, c = self.ri(scope), self.ci(scope)
        group = self.pick(
            ["float", "float", "float", "int", "int", "int", "python", "numpy", "numpy", "matrix", "bool"]
        )
        zero = self.pick(["0.0", "-0.0", "s"])
        forms = {
            "float": [
                f"y[{v}] = x[{v}] * 2.0 - y[{w}]",
                f"y[{v}] = np.sqrt(abs(x[{v}]))",
                f"y[{v}] = np.exp(-abs(x[{v}])) + y[{w}]",
                f"y[{v}] = np.tanh(x[{v}]) * 0.5",
                f"y[{v}] += max(x[{v}], {self.constant()})",
                f"y[{v}] = min(y[{v}], x[{w}])",
                f"y[{v}] = np.maximum(x[{v}], s)",
                f"x[{v}] = x[{v}] * 0.5 + x[{w}]",
                f"x[{v}] = -x[{v}]",
                f"y[{v}] = x[{v}] / (x[{w}] - 1.0)",
                f"y[{v}] = np.maximum({zero}, x[{v}])",
                f"y[{v}] = np.minimum(x[{v}], {zero}) + np.minimum(y[{w}], x[{v}])",
                f"y[{v}] = np.sign(x[{v}]) * np.copysign(1.5, x[{w}])",
                f"y[{v}] = x[{v}] ** {self.pick(['0.5', '2', '-1.0', '3.0'])}",
                f"y[{v}] = np.power(abs(x[{v}]), {self.pick(['0.5', '1.5', 'x[0]'])})",
                f"y[{v}] = np.fmod(x[{v}], x[{w}]) + x[{v}] % 1.5",
                f"y[{v}] = np.{self.pick(['log', 'log10', 'log1p', 'expm1', 'cbrt', 'sinh', 'cos'])}(x[{v}])",
                f"y[{v}] = np.{self.pick(['arcsin', 'arccos', 'arctan'])}(x[{v}] * 0.25)",
                f"y[{v}] = np.{self.pick(['arctan2', 'hypot'])}(x[{v}], x[{w}])",
                f"y[{v}] = np.{self.pick(['floor', 'ceil', 'rint', 'trunc'])}(x[{v}] * 0.75)",
            ],
            "int": [
                f"b[{v}] = b[{v}] + {self.small()}",
                f"b[{v}] = b[{v}] * 3",
                f"b[{v}] = b[{v}] ^ b[{w}]",
                f"b[{v}] = (b[{v}] << 1) | (b[{v}] >> 7)",
                f"b[{v}] = b[{v}] >> 1",
                f"b[{v}] = b[{v}] // b[{w}]",
                f"b[{v}] = b[{v}] % b[{w}]",
                f"b[{v}] = b[{v}] & {self.pick(['0x0F', '0x7F', '3'])}",
                f"b[{v}] |= {self.pick(['1', '64'])}",
                f"b[{v}] = b[{v}] << (b[{w}] & 7)",
                f"b[{v}] = b[{v}] >> b[{w}]",
                f"b[{v}] = b[{v}] - b[{w}]",
                f"b[{v}] = -b[{v}]",
                f"b[{v}] = abs(b[{v}])",
                f"b[{v}] = ~b[{v}]",
                f"b[{v}] = t % {self.pick(['100', '128', '300'])}",
                f"b[{v}] = np.sign(b[{v}]) * b[{w}]",
                f"b[{v}] = np.square(b[{v}])",
                f"b[{v}] = np.fmod(b[{v}], b[{w}])",
                f"b[{v}] = np.{self.pick(['maximum', 'minimum'])}(b[{v}], b[{w}] - {self.small()})",
                f"b[{v}] = b[{v}] * b[{w}]",
                f"b[{v}] = np.left_shift(b[{v}], {self.pick(['3', '8', '9', '70'])})",
            ],
            "python": [
                f"t = t + int(b[{v}])",
                f"t = (t * 31 + int(b[{v}])) % 65521",
                f"t = t ^ (int(b[{v}]) << {self.pick(['1', '3', 'p'])})",
                f"t += int(x[{v}] > 0)",
                f"t = t + (1 if q[{v}] else 2)",
                "t = t * 2 + 1",
                "t = t - n",
                "t = abs(t - 5)",
                f"t = max(t, int(b[{v}]))",
                f"t = t // {self.pick(['2', '3', '-2'])}",
                f"t = t % (int(b[{v}]) | 1)",
                "cnt += 1",
                f"s = s + float(x[{v}])",
                f"s = s * 0.5 + float(b[{v}])",
                f"s += float(A[{r}, {c}]) * 0.25",
                "s = -s",
            ],
            "numpy": [
                f"s = s + x[{v}]",
                f"s = max(s, x[{v}])",
                f"s = s * 0.5 + np.sqrt(abs(x[{v}]))",
                f"h = h ^ b[{v}]",
                f"h = h * 31 + b[{v}]",
                f"h = (h << 1) | (b[{v}] & 1)",
                f"h = h - b[{v}]",
                f"h = h + b[{v}] // 2",
                f"lo = min(lo, x[{v}])",
                f"lo = np.minimum(lo, x[{v}])",
                f"lo = x[{v}] if x[{v}] < lo else lo",
                f"lo = np.maximum(lo, x[{v}])",
                f"h = np.maximum(h, b[{v}])",
                f"h = h + np.sign(b[{v}])",
            ],
            "matrix": [
                f"A[{r}, {c}] += x[{v}]",
                f"A[{r}, {c}] = A[{r}, {c}] * 2",
                f"A[{r}, {c}] = A[{self.ri(scope)}, {self.ci(scope)}] - A[{r}, {c}]",
                f"y[{v}] = y[{v}] + A[{r}, {c}] * x[{w}]",
                f"A[{r}, {c}] -= b[{v}]",
            ],
            "bool": [
                f"q[{v}] = x[{v}] > 0",
                f"q[{v}] = q[{v}] ^ q[{w}]",
                f"q[{v}] = not q[{v}]",
                f"cnt += int(q[{v}])",
                f"q[{v}] = b[{v}] > b[{w}]",
            ],
        }
        return [self.pick(forms[group])]

    def tensor_comparison(self, scope) -> str:
        v, w = self.vi(scope), self.vi(scope)
        return self.pick(
            [
                f"x[{v}] > {self.constant()}",
                f"x[{v}] > x[{w}]",
                f"np.isnan(x[{v}])",
                f"abs(x[{v}]) < 1.0",
                f"b[{v}] == 0",
                f"b[{v}] & 1",
                f"b[{v}] > b[{w}]",
                f"q[{v}]",
                f"A[{self.ri(scope)}, {self.ci(scope)}] < 0",
                "s > 1.0",
                "t % 2 == 0",
                "h > 3",
                "lo < -1.0",
                "cnt > 2",
            ]
        )

    def use_python_int(self, name: str) -> list[str]:
        return [f"t = t + {name}"]

    def return_value(self, scope) -> str:
        return self.returned

    # idioms ---------------------------------------------------------------------------------------
    def idiom(self, scope) -> list[str]:
        builders = [
            self._plain,
            self._kernel,
            self._kernel,
            self._kernel,
            self._recurrence,
            self._reversed,
            self._matrix,
            self._matrix,
            self._matvec,
            self._triangular,
            self._insertion_sort,
            self._newton,
            self._hash,
            self._crc,
            self._search,
            self._skip_nan,
            self._clip,
            self._divide,
            self._extremes,
            self._bits,
            self._popcount,
            self._collatz,
            self._scan,
            self._bool_prefix,
            self._two_pointers,
            self._shortest_paths,
            self._vector_reductions,
            self._vector_extremes,
            self._math_on_arrays,
            self._dot_products,
            self._matrix_vector_products,
            self._gathers,
            self._axis_sums,
            self._whole_array_updates,
            self._axis_means_and_extremes,
        ]
        return self.pick(builders)(scope)

    def _range(self) -> tuple[str, str]:
        """A loop header over the vectors, and the kind of its counter."""
        bound = self.pick(["len(x)", "n", "len(b)"])
        return self.pick(
            [
                (f"range({bound})", VECTOR),
                (f"range({bound})", VECTOR),
                (f"range(1, {bound})", VECTOR),
                (f"range(p, {bound})", VECTOR),
                (f"range({bound} - 1, -1, -1)", VECTOR),
                (f"range(0, {bound}, 2)", VECTOR),
                ("range(k)", VECTOR),
            ]
        )

    def _plain(self, scope) -> list[str]:
        i = self.fresh("i")
        header, kind = self._range()
        return [f"for {i} in {header}:", *indent(self.inner(scope, (i, kind)))]

    def _kernel(self, scope) -> list[str]:
        """An element loop of the family's statements alone, as a kernel is written."""
        i = self.fresh("i")
        header, kind = self._range()
        self.counters.append((i, kind))
        try:
            body = [line for _ in range(self.rng.randint(1, 3)) for line in self.statement(scope.nested(in_loop=True))]
        finally:
            self.counters.pop()
        return [f"for {i} in {header}:", *indent(body)]

    def _recurrence(self, scope) -> list[str]:
        i = self.fresh("i")
        update = self.pick(
            [
                f"x[{i}] = x[{i} - 1] * 0.5 + x[{i}]",
                f"y[{i}] = y[{i} - 1] + x[{i}]",
                f"y[{i}] = np.tanh(y[{i} - 1]) + x[{i}] * 0.5",
                f"y[{i}] = np.where(y[{i} - 1] > x[{i}], y[{i} - 1], x[{i}] * 0.5)",  # a compiled select
                f"b[{i}] = b[{i} - 1] + b[{i}]",
                f"b[{i}] = b[{i}] ^ (b[{i} - 1] >> 1)",
            ]
        )
        return [f"for {i} in range(1, n):", f"    {update}", *indent(self.inner(scope, (i, VECTOR)))]

    def _reversed(self, scope) -> list[str]:
        i = self.fresh("i")
        copy = self.pick([f"y[{i}] = x[-1 - {i}]", f"y[-1 - {i}] = x[{i}] + y[{i}]", f"b[{i}] = b[-1 - {i}] - b[{i}]"])
        return [f"for {i} in range({self.pick(['n', 'n // 2', 'len(b)'])}):", f"    {copy}"]

    def _matrix(self, scope) -> list[str]:
        i, j = self.fresh("i"), self.fresh("j")
        inner_range, kind = self.pick(
            [("range(A.shape[1])", COLUMN), ("range(A.shape[1])", COLUMN), (f"range({i})", COLUMN)]
        )
        body = self.pick(
            [
                f"A[{i}, {j}] += x[{j}] * 0.5",
                f"s = s + A[{i}, {j}] * A[{i}, {j}]",
                f"if A[{i}, {j}] > A[{j} - 1, {i} % A.shape[1]]:\n    cnt += 1",
                f"A[{i}, {j}] = A[{i}, {j}] * 2 - A[{i} - 1, {j}]",
                f"y[{i}] = y[{i}] + A[{i}, {j}] * x[{j}]",
                f"A[{i}, {j}] = A[{i}, {j}] + {i} * {j}",
                # one column past the end where an element is negative: IndexError
                f"if A[{i}, {j}] < 0:\n    A[{i}, {j} + 1] = 0",
            ]
        )
        return [
            f"for {i} in range(A.shape[0]):",
            f"    for {j} in {inner_range}:",
            *indent(indent(body.split("\n"))),
            *indent(indent(self.inner(scope, (i, ROW), (j, kind)))),
        ]

    def _matvec(self, scope) -> list[str]:
        i, j, acc = self.fresh("i"), self.fresh("j"), self.fresh("acc")
        return [
            f"for {i} in range(A.shape[0]):",
            f"    {acc} = {self.pick(['0.0', '0', 'x[0] * 0'])}",
            f"    for {j} in range(A.shape[1]):",
            f"        {acc} += A[{i}, {j}] * x[{j}]",
            f"    y[{i}] = {acc}",
        ]

    def _triangular(self, scope) -> list[str]:
        i, j, acc = self.fresh("i"), self.fresh("j"), self.fresh("acc")
        return [
            f"for {i} in range(min(A.shape)):",
            f"    {acc} = x[{i}]",
            f"    for {j} in range({i}):",
            f"        {acc} = {acc} - A[{i}, {j}] * y[{j}]",
            f"    y[{i}] = {acc} / A[{i}, {i}]",
            *indent(self.inner(scope, (i, DIAGONAL))),
        ]

    def _vector_reductions(self, scope) -> list[str]:
        """Sums and means of vectors inside an element loop: prefixes, suffixes, rows, reversed
        views (the compiled tier writes out NumPy's pairwise summation)."""
        i = self.fresh("i")
        body = self.pick(
            [
                f"s = s + x[:{i}].sum()",
                f"y[{i}] = x[: {i} + 1].mean()",
                f"y[{i}] = x[{i}:].sum() - x[::-1][:{i}].sum()",
                f"s = s + np.sum(x[{i}:]) * 0.5",
                f"if x[: {i} + 1].mean() > 0.5:\n    cnt += 1",
                f"y[{i}] = np.mean(x[{i}:]) + y[{i}]",
            ]
        )
        return [f"for {i} in range(n):", *indent(body.split("\n")), *indent(self.inner(scope, (i, VECTOR)))]

    def _axis_sums(self, scope) -> list[str]:
        """Sums over axes inside an element loop: of the matrix, of products of its rows and
        columns with parts of the vectors, of outer products and windows taken with new axes (the
        compiled tier adds in NumPy's order, computing each product where it adds it)."""
        i = self.fresh("i")
        rows, cols = "A.shape[0]", "A.shape[1]"
        body = self.pick(
            [
                f"y[:{cols}] = A.sum(axis=0) * x[{i}] + y[:{cols}]",
                f"y[:{rows}] = np.sum(A * x[:{cols}], axis=1) + y[:{rows}] * 0.5",
                f"y[:{cols}] = np.sum(x[:{rows}, None] * A, axis=0, keepdims=True)[0] - y[:{cols}]",
                f"y[{i}] = np.sum(x[:{cols}, None] * x[None, :{cols}] * x[{i}], axis=(0, 1)) + y[{i}]",
                f"y[:{rows}] = np.sum(A[:, None, :] * x[None, {i} % 2 : {i} % 2 + 2, None], axis=(1, 2))",
                f"y[:{cols}] = np.sum(A * 2.0 - x[{i}], axis=0) + np.sum(A, axis=(0,)) * 0.5",
            ]
        )
        return [f"for {i} in range(n):", f"    {body}", *indent(self.inner(scope, (i, VECTOR)))]

    def _axis_means_and_extremes(self, scope) -> list[str]:
        """Means, maxima and minima over axes inside an element loop: of the matrix (float or
        integer), of products with parts of the vectors, of row blocks cut by the counter (empty
        at the first step: a mean is NaN, a max raises ValueError), keepdims (the compiled tier
        visits the elements in NumPy's order, its max/min starting at each result's first)."""
        i = self.fresh("i")
        rows, cols = "A.shape[0]", "A.shape[1]"
        body = self.pick(
            [
                f"y[:{cols}] = A.mean(axis=0) * x[{i}] + y[:{cols}]",
                f"y[:{rows}] = np.max(A * x[:{cols}], axis=1) - y[:{rows}] * 0.5",
                f"y[:{cols}] = np.min(x[:{rows}, None] * A, axis=0, keepdims=True)[0] + y[:{cols}]",
                f"y[:{rows}] = np.maximum.reduce(A, axis=1) + np.amin(A, axis=-1)",
                f"y[{i}] = np.mean(x[:{cols}, None] * x[None, :{cols}] * x[{i}], axis=(0, 1)) + y[{i}]",
                f"y[:{cols}] = A[: {i} % {rows} + 1].max(axis=0) - A[{i} % {rows} :].min(axis=0)",
                f"y[:{cols}] = np.mean(A[: {i} % {rows}], axis=0)",  # NaN at no rows
                f"s = s + np.max(A[:{i}], axis=0)[0]",  # no rows at the first step: ValueError
                f"lo = np.minimum(lo, np.min(A * x[{i}], axis=(0, 1)))",
            ]
        )
        return [f"for {i} in range(n):", f"    {body}", *indent(self.inner(scope, (i, VECTOR)))]

    def _vector_extremes(self, scope) -> list[str]:
        """Maxima and minima of vectors inside an element loop: prefixes (empty ones raise
        ValueError), suffixes, reversed and strided views, rows, of floats with NaNs and zeros of
        both signs and of integers (the compiled tier writes out NumPy's reduction)."""
        i = self.fresh("i")
        body = self.pick(
            [
                f"s = s + x[: {i} + 1].max()",
                f"y[{i}] = np.max(x[{i}:]) - np.min(x[: {i} + 1])",
                f"y[{i}] = np.amax(x[::-1][: {i} + 1]) + np.amin(x[::2])",
                f"lo = np.minimum(lo, x[{i}:].min())",
                f"if x[: {i} + 1].max() > {self.constant()}:\n    cnt += 1",
                f"h = h + b[: {i} + 1].max() - np.min(b[{i}:])",
                f"t = t + int(np.amax(b[::-1][{i}:]))",
                f"y[{i}] = A[{i} % A.shape[0], :].max() + np.min(A[:, {i} % A.shape[1]])",
                f"s = s + x[:{i}].max()",  # empty at the first step: ValueError
            ]
        )
        return [f"for {i} in range(n):", *indent(body.split("\n"))]  # alone: a loop the compiled tier takes

    def _math_on_arrays(self, scope) -> list[str]:
        """Math functions on parts of the float vectors inside an element loop, each result stored
        (the compiled tier's contract is per call: within 4 ulp of NumPy's; recurrences, which may
        drift further, are left out)."""
        i = self.fresh("i")
        function = self.pick(["tanh", "exp", "sin", "cos", "arctan", "log1p", "expm1", "cbrt", "sinh"])
        body = self.pick(
            [
                f"y[{i}:] = np.{function}(x[{i}:] * 0.5)",
                f"y[: {i} + 1] = np.{function}(-abs(x[: {i} + 1]))",
                f"y[::2] = np.{function}(x[::2]) * 2.0",
                f"y[{i}:] = np.{self.pick(['arctan2', 'hypot'])}(x[{i}:], x[{i}])",
                f"y[{i}] = np.{function}(x[{i}:])[0]",
                f"y[:] = np.{self.pick(['log', 'log10', 'arcsin', 'arccosh'])}(x)",
            ]
        )
        return [f"for {i} in range(n):", f"    {body}"]  # alone: a loop the compiled tier takes

    def _whole_array_updates(self, scope) -> list[str]:
        """Whole-array updates of the arguments between element loops, as NumPy users write
        them: fused groups whose result is the argument's new value, written into its own buffer
        (``x += y * 0.5 - 1.0``), some reading the argument again in the group (``x -= 0.25 * (x -
        y)``), with a broadcast row (``A += b[: A.shape[1]] * 2 - A``), or reading a view of the
        argument itself (``A -= A[0] * 2``, ``x += y * x[i]``: those must compute a new array)."""
        return [
            self.pick(
                [
                    "x += y * 0.5 - 1.0",
                    "x -= 0.25 * (x - y)",
                    "x *= x * 0.5 + 1.0",
                    f"x += y * x[{self.vi(scope)}]",
                    "A += b[: A.shape[1]] * 2 - A",
                    "A -= A[0] * 2",
                    "A *= A * 2 - 1",
                ]
            )
        ]

    def _dot_products(self, scope) -> list[str]:
        """Products of rows and columns in loops, as Cholesky, LU and Durbin write them: of
        contiguous rows (compiled with BLAS) and of columns and reversed vectors (NumPy's)."""
        i, j = self.fresh("i"), self.fresh("j")
        return self.pick(
            [
                [
                    f"for {i} in range(A.shape[0]):",
                    f"    for {j} in range({i}):",
                    f"        A[{i}, {j}] -= A[{i}, :{j}] @ A[{j}, :{j}]",
                ],
                [
                    f"for {i} in range(min(A.shape)):",
                    f"    for {j} in range({i}, A.shape[1]):",
                    f"        A[{i}, {j}] -= A[{i}, :{i}] @ A[:{i}, {j}]",
                ],
                [f"for {i} in range(1, n):", f"    y[{i}] = x[:{i}][::-1] @ y[:{i}] * 0.5 + x[{i}]"],
                [f"for {i} in range(n):", f"    s = s + x[{i}:] @ x[{i}:]"],
            ]
        )

    def _matrix_vector_products(self, scope) -> list[str]:
        """Small matrix-vector products in loops, as recurrent steps write them: ``A @ v`` and
        ``v @ A`` stored into parts and combined elementwise, and a state carried through the
        loop (computed into buffers the compiled loop reuses, which must not clobber a state
        still read). The grid values of ``x`` and ``A`` keep the sums exact in any order."""
        i, h, g = self.fresh("i"), self.fresh("h"), self.fresh("g")
        rows, cols = "A.shape[0]", "A.shape[1]"
        return self.pick(
            [
                [f"for {i} in range(n):", f"    y[:{rows}] = A @ x[:{cols}] + y[:{rows}] * 0.5"],
                [f"for {i} in range({rows}):", f"    y[:{cols}] = x[:{rows}] @ A - y[:{cols}] * x[{i}]"],
                [f"for {i} in range(n):", f"    y[{i}] = (A @ x[:{cols}])[-1] * 0.5 + (x[:{rows}] @ A)[0]"],
                [
                    f"{h} = x[:{rows}] * 1.0",
                    f"for {i} in range(n):",
                    f"    {h} = A @ x[:{cols}] * 0.5 + {h} * 0.5",
                    f"y[:{rows}] = {h}",
                ],
                [
                    f"{h} = x[:{rows}] * 1.0",
                    f"{g} = {h}",
                    f"for {i} in range(n):",
                    f"    {g}, {h} = {h}, A @ x[:{cols}] * 0.5 + {g} * 0.5",
                    f"y[:{rows}] = {h} - {g}",
                ],
                [f"for {i} in range(n):", f"    b[:{rows}] = A @ b[:{cols}]"],
            ]
        )

    def _gathers(self, scope) -> list[str]:
        """Gathers by integer arrays in element loops, as sparse kernels write them: by parts of an
        index vector (``x[cols[a:b]]``), with negative indices, of narrow and unsigned dtypes,
        now and then one out of range (IndexError); the gathered vector dotted with a part of ``x``
        (BLAS: eager's bits), summed, reduced or stored. The index vector is made before the loop
        from ``b``'s values, folded into ``[-n, n)`` (``[0, n)`` unsigned)."""
        i, ix = self.fresh("i"), self.fresh("ix")
        dtype = self.pick(["np.int64", "np.int64", "np.int32", "np.int8", "np.uint8", "np.uint64"])
        out_of_range = " + 1" if self.rng.random() < 0.1 else ""
        if dtype.startswith("np.u"):
            made = f"{ix} = (b.astype(np.int64) % (n{out_of_range})).astype({dtype})"
        else:
            made = f"{ix} = (b.astype(np.int64) % (2 * n{out_of_range}) - n).astype({dtype})"
        body = self.pick(
            [
                f"y[{i}] = x[:{i}] @ x[{ix}[:{i}]]",
                f"y[{i}] = x[{ix}[{i}:]] @ x[{i}:] * 0.5 + y[{i}]",
                f"s = s + x[{ix}[{i}:]].sum()",
                f"y[: {i}] = x[{ix}[:{i}]] * 2.0 - y[: {i}]",
                f"lo = np.minimum(lo, x[{ix}[{i}:]].max())",
                f"h = h + b[{ix}[: {i} + 1]].max()",
                f"y[{i}] = x[{ix}[: {i} + 1]][-1] - x[{ix}][{i}]",
                f"s = s + x[{ix}[:{i}]] @ x[{ix}[{i}:]]",  # sizes differ but at the middle: ValueError
            ]
        )
        return [made, f"for {i} in range(n):", f"    {body}"]  # alone: a loop the compiled tier takes

    def _insertion_sort(self, scope) -> list[str]:
        i, j, key = self.fresh("i"), self.fresh("j"), self.fresh("key")
        a = self.pick(["x", "x", "b"])
        return [
            f"for {i} in range(1, len({a})):",
            f"    {key} = {a}[{i}]",
            f"    {j} = {i} - 1",
            f"    while {j} >= 0 and {a}[{j}] > {key}:",
            f"        {a}[{j} + 1] = {a}[{j}]",
            f"        {j} -= 1",
            f"    {a}[{j} + 1] = {key}",
        ]

    def _newton(self, scope) -> list[str]:
        i, v, g, it = self.fresh("i"), self.fresh("v"), self.fresh("g"), self.fresh("it")
        start = self.pick([f"abs(x[{i}]) + 1.0", f"abs(float(x[{i}])) + 1.0", f"float(abs(b[{i}])) + 0.5"])
        if self.rng.random() < 0.5:
            loop = [
                f"    {g} = 1.0",
                f"    while abs({g} * {g} - {v}) > 1e-9 and {it} < 50:",
                f"        {g} = 0.5 * ({g} + {v} / {g})",
                f"        {it} += 1",
                f"    y[{i}] = {g}",
            ]
        else:
            loop = [
                f"    while abs({v}) > {self.pick(['1e-3', '0.1'])} and {it} < 50:",
                f"        {v} = {v} * {self.pick(['0.5', '-0.75'])}",
                f"        {it} += 1",
                f"    y[{i}] = {v}",
            ]
        return [f"for {i} in range(n):", f"    {v} = {start}", f"    {it} = 0", *loop, f"    t += {it}"]

    def _hash(self, scope) -> list[str]:
        i = self.fresh("i")
        update = self.pick(
            [
                f"t = (t * 31 + int(b[{i}])) & 0xFFFFFFFF",
                f"t = t ^ (int(b[{i}]) << ({i} % 8))",
                f"h = h * 31 + b[{i}]",
                f"h = (h << 1) ^ b[{i}]",
                f"h = h ^ (b[{i}] >> 1)",
            ]
        )
        return [f"for {i} in range(len(b)):", f"    {update}", *indent(self.inner(scope, (i, VECTOR)))]

    def _crc(self, scope) -> list[str]:
        i, u, c = self.fresh("i"), self.fresh("u"), self.fresh("crc")
        return [
            f"{c} = 0xFFFF",
            f"for {i} in range(len(b)):",
            f"    {c} = {c} ^ {self.pick([f'int(b[{i}])', f'(int(b[{i}]) & 0xFF)'])}",
            f"    for {u} in range(8):",
            f"        if {c} & 1:",
            f"            {c} = ({c} >> 1) ^ 0xA001",
            "        else:",
            f"            {c} = {c} >> 1",
            f"t = t + {c}",
        ]

    def _search(self, scope) -> list[str]:
        i = self.fresh("i")
        test = self.pick([f"x[{i}] < {self.constant()}", f"b[{i}] == 0", f"x[{i}] > x[{i} - 1]", f"q[{i}]"])
        lines = [
            f"for {i} in range({self.pick(['n', 'len(x)'])}):",
            f"    if {test}:",
            f"        idx = {i}",
            "        break",
            *indent(self.inner(scope, (i, VECTOR))),
        ]
        if self.rng.random() < 0.5:
            lines += ["else:", "    idx = n"]
        return lines

    def _skip_nan(self, scope) -> list[str]:
        i = self.fresh("i")
        test = self.pick([f"np.isnan(x[{i}])", f"np.isnan(x[{i}]) or not q[{i}]", f"not np.isfinite(x[{i}])"])
        return [
            f"for {i} in range({self.pick(['n', 'len(x)'])}):",
            f"    if {test}:",
            "        continue",
            f"    s = s + x[{i}]",
            "    cnt += 1",
            *indent(self.inner(scope, (i, VECTOR))),
        ]

    def _clip(self, scope) -> list[str]:
        i = self.fresh("i")
        update = self.pick(
            [
                f"y[{i}] = max(min(x[{i}], 2.0), -2.0)",
                f"y[{i}] = min(max(-2.0, x[{i}]), 2.0)",
                f"y[{i}] = max(x[{i}], y[{i} - 1])",
                f"y[{i}] = np.maximum(x[{i}], y[{i} - 1])",
                f"y[{i}] = np.minimum(x[{i}], 1.5) + abs(x[{i}])",
            ]
        )
        return [f"for {i} in range({self.pick(['n', 'len(x)'])}):", f"    {update}"]

    def _divide(self, scope) -> list[str]:
        i = self.fresh("i")
        update = self.pick(
            [
                f"b[{i}] = b[{i}] // b[{i} - 1]",
                f"b[{i}] = b[{i}] % b[{i} - 1]",
                f"t = t + int(b[{i}]) // int(b[{i} - 1])",
                f"t = t + int(b[{i}]) % (int(b[{i} - 1]) or 7)",
                f"y[{i}] = x[{i}] // x[{i} - 1]",
                f"y[{i}] = x[{i}] % x[{i} - 1]",
                f"y[{i}] = b[{i}] / b[{i} - 1]",
            ]
        )
        return [f"for {i} in range(1, len(b)):", f"    {update}"]

    def _extremes(self, scope) -> list[str]:
        i = self.fresh("i")
        return [
            f"for {i} in range(1, n):",
            f"    if x[{i}] < lo:",
            f"        lo = x[{i}]",
            f"    elif x[{i}] > {self.pick(['y[0]', 's', '2.0'])}:",
            f"        y[0] = x[{i}]",
            "    else:",
            "        cnt += 1",
        ]

    def _bits(self, scope) -> list[str]:
        i = self.fresh("i")
        update = self.pick(
            [
                f"b[{i}] = (b[{i}] << 1) | (b[{i}] >> 7)",
                f"b[{i}] = b[{i}] ^ (b[{i}] >> 1)",
                f"b[{i}] = b[{i}] << b[({i} + 1) % n]",
                f"b[{i}] = b[{i}] >> b[-1 - {i}]",
                f"b[{i}] = (b[{i}] & 0x0F) << 4 | (b[{i}] >> 4) & 0x0F",
                f"b[{i}] = b[{i}] * {self.small()} + t % 7",
            ]
        )
        return [f"for {i} in range(len(b)):", f"    {update}", *indent(self.inner(scope, (i, VECTOR)))]

    def _popcount(self, scope) -> list[str]:
        i, v = self.fresh("i"), self.fresh("v")
        return [
            f"for {i} in range(len(b)):",
            f"    {v} = int(b[{i}]) & 0xFF",
            f"    while {v}:",
            f"        cnt += {v} & 1",
            f"        {v} >>= 1",
        ]

    def _collatz(self, scope) -> list[str]:
        i, v, it = self.fresh("i"), self.fresh("v"), self.fresh("it")
        return [
            f"for {i} in range(len(b)):",
            f"    {v} = abs(int(b[{i}])) + 1",
            f"    {it} = 0",
            f"    while {v} != 1 and {it} < 30:",
            f"        if {v} % 2 == 0:",
            f"            {v} = {v} // 2",
            "        else:",
            f"            {v} = 3 * {v} + 1",
            f"        {it} += 1",
            f"    t += {it}",
        ]

    def _scan(self, scope) -> list[str]:
        j = self.fresh("j")
        guard = "" if self.rng.random() < 0.15 else f"{j} < n and "  # unguarded: IndexError at the end
        return [
            f"{j} = {self.pick(['0', 'p'])}",
            f"while {guard}x[{j}] {self.pick(['<', '<='])} {self.pick(['1.0', '2.0', 's'])}:",
            f"    {j} += 1",
            f"idx = {j}",
        ]

    def _bool_prefix(self, scope) -> list[str]:
        i = self.fresh("i")
        update = self.pick(
            [
                f"q[{i}] = q[{i}] ^ q[{i} - 1]",
                f"q[{i}] = x[{i}] > x[{i} - 1]",
                f"if q[{i}]:\n    y[{i}] = x[{i}]\nelse:\n    y[{i}] = -x[{i}]",
                f"q[{i}] = q[{i}] and not q[{i} - 1]",
            ]
        )
        return [f"for {i} in range(1, len(q)):", *indent(update.split("\n"))]

    def _two_pointers(self, scope) -> list[str]:
        a, z = self.fresh("a"), self.fresh("z")
        step = self.pick(
            [
                [f"    x[{a}], x[{z}] = x[{z}], x[{a}]", f"    {a} += 1", f"    {z} -= 1"],
                [f"    if x[{a}] + x[{z}] > 0:", f"        {z} -= 1", "    else:", f"        {a} += 1", "    cnt += 1"],
            ]
        )
        return [f"{a} = 0", f"{z} = n - 1", f"while {a} < {z}:", *step]

    def _shortest_paths(self, scope) -> list[str]:
        m, i, j = self.fresh("m"), self.fresh("i"), self.fresh("j")
        return [
            f"for {m} in range(min(A.shape)):",
            f"    for {i} in range(min(A.shape)):",
            f"        for {j} in range(min(A.shape)):",
            f"            if A[{i}, {m}] + A[{m}, {j}] < A[{i}, {j}]:",
            f"                A[{i}, {j}] = A[{i}, {m}] + A[{m}, {j}]",
        ]

    # inputs ---------------------------------------------------------------------------------------
    @classmethod
    def calls(cls, rng, count) -> list[Call]:
        """The same dtypes and shapes for each call of a program, drawn from its seed."""
        n = int(rng.integers(4, 13))
        shape = (int(rng.integers(3, 5)), int(rng.integers(3, 5)))
        float_dtype = FLOAT_DTYPES[rng.integers(len(FLOAT_DTYPES))]
        int_dtype = INT_DTYPES[rng.integers(len(INT_DTYPES))]
        matrix_dtype = MATRIX_DTYPES[rng.integers(len(MATRIX_DTYPES))]
        return [
            Call(
                (
                    floats(rng, n, float_dtype),
                    integers(rng, n, int_dtype),
                    floats(rng, shape, matrix_dtype)
                    if np.dtype(matrix_dtype).kind == "f"
                    else integers(rng, shape, matrix_dtype, 6),
                    rng.random(n) < 0.5,
                    trip_count(rng),
                    python_int(rng),
                )
            )
            for _ in range(count)
        ]


def floats(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    """``grid`` floats of ``dtype``; now and then a NaN or an infinity among them."""
    values = grid(rng, shape)
    for special in (np.nan, np.inf, -np.inf):
        if rng.random() < 0.2:
            values.flat[rng.integers(values.size)] = special
    return values.astype(dtype)


def integers(rng: np.random.Generator, shape, dtype, magnitude: int | None = None) -> np.ndarray:
    """Integers of ``dtype``: anywhere in its range for 8-bit dtypes (else within ``magnitude``,
    default 50), with a zero or two most of the time."""
    info = np.iinfo(dtype)
    if magnitude is None and info.bits > 8:
        magnitude = 50
    low, high = (info.min, info.max) if magnitude is None else (max(info.min, -magnitude), magnitude)
    values = rng.integers(low, high, shape, endpoint=True)
    for _ in range(int(rng.integers(0, 3))):
        values.flat[rng.integers(values.size)] = 0
    return values.astype(dtype)
