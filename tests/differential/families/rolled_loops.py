"""Loops over a Python ``range`` long enough to be rolled into a ``while_loop``.

Stencils stepped in place, prefix sums, accumulators of Python numbers, searches that ``break``,
``for ... else``, counters tested with ``i % 2``, steps and reversed ranges, loops nested with
``range(i)``, the counter read after the loop, and the patterns whose body needs the counter as a
Python int (indexing a Python list, growing a list, a prefix slice ``x[:i]``, ``np.zeros(m)`` of a
number the loop counted), which must fall back to unrolling with eager NumPy's results.
"""

from __future__ import annotations

from ..skeleton import SIZE_GROWTH, indent
from .base import VectorAndMatrix

LENGTH, ROWS, COLUMNS = VectorAndMatrix.LENGTH, VectorAndMatrix.ROWS, VectorAndMatrix.COLUMNS


class RolledLoops(VectorAndMatrix):
    name = "rolled_loops"
    summary = "for over a Python range of 5+ iterations: rolled into a while_loop, or unrolled where it must be"

    def __init__(self, generator):
        super().__init__(generator)
        self.returned = self.pick(["x, s, c", "out, A", "s", "c, x.sum()", "A, out, s", "x, c"])

    def setup(self) -> list[str]:
        return ["s = 0.0", "c = 0", "out = np.zeros(len(x))"]

    def statement(self, scope) -> list[str]:
        i, r = self.index(scope, LENGTH), self.index(scope, ROWS)
        forms = [
            [f"s = s + x[{i}]"],
            ["c = c + 1"],
            [f"x[{i}] = x[{i}] * 0.5"],
            [f"A[{r}, 0] = A[{r}, 0] + s"],
            [f"out[{i}] = out[{i}] + {self.constant()}"],
            ["s = s * 0.5 + c"],
        ]
        return self.pick(forms)

    def idiom(self, scope) -> list[str]:
        i, j, t = self.fresh("i"), self.fresh("j"), self.fresh("t")
        steps = self.pick([5, 6, 8, 12])
        inner = self.block(scope.nested(in_loop=True))
        idioms = [
            # an explicit time-stepped stencil, in place and by rebinding
            [
                f"for {t} in range({steps}):",
                "    x[1:-1] = x[1:-1] + 0.25 * (x[2:] - 2 * x[1:-1] + x[:-2])",
            ],
            [f"for {t} in range({steps}):", "    x = x.copy()", "    x[1:] = x[1:] * 0.5 + x[:-1] * 0.5"],
            # prefix sums and running statistics, indexed by the counter
            [f"for {i} in range(1, len(x)):", f"    out[{i}] = out[{i} - 1] + x[{i}]"],
            [f"for {i} in range(len(x)):", "    c += 1", f"    s += x[{i}] * {i}", *indent(inner)],
            [f"for {i} in range({steps}):", f"    s = s + {i} * 0.5", f"    c = c + {i} % 3"],
            # searches
            [
                f"for {i} in range(len(x)):",
                f"    if x[{i}] > {self.constant()}:",
                f"        c = {i}",
                "        break",
                *indent(inner),
            ],
            [
                f"for {i} in range(len(x)):",
                f"    if x[{i}] < -{self.pick(['1.0', '2.0', '3.0'])}:",
                "        break",
                "else:",
                "    c += 10",
            ],
            [f"for {i} in range(len(x)):", f"    if {i} % 2 == 0:", f"        x[{i}] = -x[{i}]"],
            # steps, reversed ranges, a Python int bound from an argument
            [f"for {i} in range(len(x) - 1, 0, -2):", f"    s += x[{i}]"],
            [f"for {i} in range(p, len(x)):", f"    out[{i}] = x[{i}] * {i}"],
            # nested loops; the inner bound depends on the counter
            [
                f"for {i} in range(ROWS):".replace("ROWS", str(ROWS)),
                f"    for {j} in range({i}):",
                f"        A[{i}, {j} % {COLUMNS}] += x[{j}]",
            ],
            [f"for {i} in range(A.shape[0]):", f"    A[{i}] = A[{i}] * x[{i}]", *indent(inner)],
            # sizes compared as numbers (with changing sizes, a later call's length matches)
            [f"if len(x) == {LENGTH + SIZE_GROWTH[1]}:", "    s = s + x[-1]", "elif x.shape[0] > 7:", "    c += 2"],
            # the counter after the loop
            [f"for {i} in range({steps}):", "    s = s + 1.0", f"c = c + {i}"],
            # bodies that need the counter as a Python int: unrolled, as before
            [
                "coef = [0.5, 1.0, 1.5, 2.0, 2.5, 3.0]",
                f"for {i} in range(6):",
                f"    s += coef[{i}] * x[{i}]",
            ],
            ["parts = []", f"for {i} in range(6):", f"    parts.append(x[{i}] * 2)", "out[:6] = np.array(parts)"],
            # a loop over rows that grows a list or changes a carried dtype: unrolled over the rows
            ["rows = []", "for v in x[:6]:", "    rows.append(v * 0.5)", "out[:6] = out[:6] + np.array(rows)"],
            ["tot = 0", "for v in x[:7]:", "    tot = tot + v", "s += tot"],
            [f"for {i} in range(1, 6):", f"    out[{i}] = x[:{i}].sum()"],
            ["m = 0", f"for {i} in range(6):", "    m += 1", "out[:m] = np.zeros(m) + x[:m]"],
            # A view of the row written last iteration, read while the next row is written (a
            # recursive filter), and the same with the view taken of the row about to be written.
            [
                "prev = A[0]",
                f"for {i} in range(1, A.shape[0]):",
                f"    A[{i}] = 0.5 * prev + A[{i}]",
                f"    prev = A[{self.pick(['{0}', '{0} - 1'])}]".format(i),
                "s = s + prev.sum()",
            ],
            # A second-order recursive filter over the rows of a float32 copy, carrying views of the
            # rows it wrote (Deriche's): float64 coefficients times float32 rows, stored as float32.
            [
                "A32 = A.astype(np.float32)",
                "F = np.zeros_like(A32)",
                "prev = np.zeros(A.shape[1], dtype=np.float32)",
                "prev2 = prev",
                f"for {i} in range(A.shape[0]):",
                f"    F[{i}, :] = np.float64(0.5) * A32[{i}, :] + 0.25 * prev + np.float64(-0.125) * prev2",
                "    prev2 = prev",
                f"    prev = F[{i}, :]",
                "s = s + F.sum()",
            ],
            [f"for {i} in range(1, A.shape[0]):", f"    A[{i}, 1:] += A[{i} - 1, :-1] * 0.5"],
            # a recurrence long enough that its gradient sums the weight's outer products in
            # blocks inside the backward loop (autodiff/outer_sums.py, BlockedSums)
            [
                "W = A.T @ A * 0.1",
                "h = np.zeros(A.shape[1]) + 0.1",
                f"for {t} in range({self.pick([65, 70, 97])}):",
                f"    h = np.tanh(h @ W + x[{t} % 8] * 0.5)",
                "s = s + h.sum()",
            ],
            [f"for {i} in range(len(x) - 1):", f"    x[{i} + 1:] = x[{i} + 1:] - x[{i}] * 0.25"],
        ]
        return self.pick(idioms)

    def tensor_comparison(self, scope) -> str:
        i = self.index(scope, LENGTH)
        return self.pick([f"x[{i}] > {self.constant()}", "s > 1.0", "c > 3", f"A[{self.index(scope, ROWS)}, 1] < 0"])
