"""Element and row swaps, and the shifting of insertion sort, on argument arrays.

``a[i], a[j] = a[j], a[i]`` (elements: NumPy scalars, so a true swap), ``M[i], M[j] = M[j], M[i]``
(rows: views, so eager NumPy copies one row over the other), ``a[[i, j]] = a[[j, i]]``, a swap
through a temporary, ``a[j + 1] = a[j]``, and the sorting loops users write with them.
"""

from __future__ import annotations

from ..skeleton import indent
from .base import Call, Family, grid, python_int, trip_count

LENGTH, ROWS, COLUMNS = 6, 4, 3


class Swaps(Family):
    name = "swaps"
    summary = "a[i], a[j] = a[j], a[i], a[[i, j]] = a[[j, i]], row swaps, insertion-sort shifting"
    parameters = "a, M, k, p"

    def __init__(self, generator):
        super().__init__(generator)
        self.returned = self.pick(["a, M", "a", "M", "a.sum(), M[0]", "a.copy(), M.copy()"])

    def statement(self, scope) -> list[str]:
        i, j = self.index(scope, LENGTH - 1), self.index(scope, LENGTH - 1)
        r, q = self.index(scope, ROWS), self.index(scope, ROWS)
        t = self.fresh("t")
        forms = [
            [f"a[{i}], a[{j}] = a[{j}], a[{i}]"],
            [f"if a[{i}] > a[{j}]:", f"    a[{i}], a[{j}] = a[{j}], a[{i}]"],
            [f"a[[{i}, {j}]] = a[[{j}, {i}]]"],
            [f"{t} = a[{i}]", f"a[{i}] = a[{j}]", f"a[{j}] = {t}"],
            [f"a[{i} + 1] = a[{i}]"],
            [f"a[{i}:{i} + 2] = a[{i}:{i} + 2][::-1]"],
            [f"M[{r}], M[{q}] = M[{q}], M[{r}]"],
            [f"M[[{r}, {q}]] = M[[{q}, {r}]]"],
            [f"M[{r}], M[{q}] = M[{q}].copy(), M[{r}].copy()"],
            ["M[:, [0, 2]] = M[:, [2, 0]]"],
            [f"a[{i}] = a[{i}] + M[{r}, 0]"],
        ]
        return self.pick(forms)

    def idiom(self, scope) -> list[str]:
        i, j, m = self.fresh("i"), self.fresh("j"), self.fresh("m")
        bound = self.pick(["len(a) - 1", "k", "k + 1"])
        # Blocks inside may index with the counter only where it stays small (rows of M).
        counter = None if bound == "len(a) - 1" else i
        inner = self.block(scope.nested(in_loop=True, tensor_index=counter))
        bubble = [
            f"for {i} in range({bound}):",
            f"    if a[{i}] > a[{i} + 1]:",
            f"        a[{i}], a[{i} + 1] = a[{i} + 1], a[{i}]",
            *indent(inner),
        ]
        insertion = [
            f"for {i} in range(1, {self.pick(['len(a)', 'k + 1'])}):",
            f"    key = a[{i}]",
            f"    {j} = {i} - 1",
            f"    while {j} >= 0 and a[{j}] > key:",
            f"        a[{j} + 1] = a[{j}]",
            f"        {j} -= 1",
            f"    a[{j} + 1] = key",
        ]
        reversal = [f"for {i} in range(k):", f"    a[{i}], a[-1 - {i}] = a[-1 - {i}], a[{i}]", *indent(inner)]
        selection = [
            f"{m} = 0",
            f"for {j} in range(1, {self.pick(['len(a)', 'k + 1'])}):",
            f"    if a[{j}] < a[{m}]:",
            f"        {m} = {j}",
            f"a[0], a[{m}] = a[{m}], a[0]",
        ]
        partition = [
            f"{m} = 0",
            f"for {i} in range(len(a)):",
            f"    if a[{i}] < {self.pick(['0.0', 'a[-1]', 'M[0, 0]'])}:",
            f"        a[{i}], a[{m}] = a[{m}], a[{i}]",
            f"        {m} += 1",
        ]
        return self.pick([bubble, insertion, reversal, selection, partition])

    def tensor_comparison(self, scope) -> str:
        i, j = self.index(scope, LENGTH), self.index(scope, LENGTH)
        return self.pick(
            [f"a[{i}] > a[{j}]", f"a.sum() > {self.constant()}", f"M[{self.index(scope, ROWS)}, 0] < M[0, 1]"]
        )

    def return_value(self, scope) -> str:
        return self.returned

    @classmethod
    def calls(cls, rng, count) -> list[Call]:
        return [
            Call((grid(rng, LENGTH, -3, 4), grid(rng, (ROWS, COLUMNS)), trip_count(rng), python_int(rng)))
            for _ in range(count)
        ]
