"""Views of arguments read and updated around tensor loops and branches that write their base.

``row = X[0]``, ``inner = X[1:-1, 1:-1]``, ``lo = x[:3]; hi = x[3:]`` are taken first (and taken
again anywhere), then mixed with writes to the base (``X[0, i] = ...``, ``X[1:-1, 1:-1] += ...``)
and writes through the views (``inner += ...``, ``lo += hi``): every write must be seen through
every name, in the results and in the caller's arrays, as in eager NumPy.
"""

from __future__ import annotations

from ..skeleton import indent
from .base import Call, Family, grid, python_int, trip_count

ROWS, COLUMNS, LENGTH = 4, 5, 6
RETURNABLE = ["s", "acc", "row", "inner", "lo", "hi", "col", "X", "x", "row.sum()", "inner.copy()"]


class Views(Family):
    name = "views"
    summary = "views of arguments (row = X[0], X[1:-1, 1:-1], x[:3]) around loops/branches writing the base"
    parameters = "X, x, k, p"

    def __init__(self, generator):
        super().__init__(generator)
        self.returned = ", ".join(self.rng.sample(RETURNABLE, self.rng.randint(1, 3)))

    def setup(self) -> list[str]:
        return [
            "row = X[0]",
            "col = X[:, 1]",
            "inner = X[1:-1, 1:-1]",
            "lo = x[:3]",
            "hi = x[3:]",
            "s = X[0, 0]",
            "acc = np.zeros(5)",
        ]

    def statement(self, scope) -> list[str]:
        kind = self.pick(["base", "base", "view", "view", "retake", "read"])
        return [self.pick(getattr(self, f"_{kind}_writes")(scope))]

    def _base_writes(self, scope) -> list[str]:
        r, c, i, f = self._row(scope), self._column(scope), self.index(scope), self._float(scope)
        return [
            f"X[{r}, {c}] = {f}",
            f"X[{r}, 1] += {f}",
            "X[1:-1, 1:-1] += 0.1 * (X[:-2, 1:-1] - inner)",
            f"X[{r}] *= 0.5",
            f"X[:, {c}] -= {f}",
            f"x[{i}] = {f}",
            "x[:3] += 1.0",
            "x += 0.5",
        ]

    def _view_writes(self, scope) -> list[str]:
        c, f = self._column(scope), self._float(scope)
        return [
            f"row[{c}] = {f}",
            "row += 0.5",
            "row[:] = row * 0.5",
            "inner += 0.25",
            f"inner[{self.pick(['0', '1'])}, {self.index(scope)}] = {f}",
            "lo += hi",
            f"hi[{self.index(scope)}] -= 1.0",
            "col *= 2.0",
        ]

    def _retake_writes(self, scope) -> list[str]:
        return [f"row = X[{self._row(scope)}]", "lo = x[:3]", "hi = x[3:]", "inner = X[1:-1, 1:-1]"]

    def _read_writes(self, scope) -> list[str]:
        return [
            "acc = acc + row",
            f"acc = acc * 0.5 + X[{self._row(scope)}]",
            f"s = s * 0.5 + row[{self._column(scope)}]",
            "s = s + inner.sum()",
            "s = s - lo.mean()",
        ]

    def idiom(self, scope) -> list[str]:
        t = self.fresh("t")
        steps = [
            ["inner += 0.1 * (X[:-2, 1:-1] + X[2:, 1:-1] - 2.0 * inner)"],
            ["X[1:-1, 1:-1] = 0.25 * (X[:-2, 1:-1] + X[2:, 1:-1] + X[1:-1, :-2] + X[1:-1, 2:])"],
            [f"row = X[{t}]", "row -= row.mean()"],
        ]
        body = self.pick(steps) + self.block(scope.nested(in_loop=True, tensor_index=t))
        row_loop = [f"for r{t} in X:", f"    r{t} *= 0.5", *indent(self.block(scope.nested(in_loop=True)))]
        head, tail = self.fresh("head"), self.fresh("tail")
        split = [f"{head} = x[:k]", f"{tail} = x[k:]", f"{head} += 1.0", f"s = s + {tail}.sum() - {head}.sum()"]
        return self.pick([[f"for {t} in range(k):", *indent(body)], row_loop, split])

    def _row(self, scope) -> str:
        return self.index(scope, ROWS)

    def _column(self, scope) -> str:
        return self.index(scope, COLUMNS)

    def _float(self, scope) -> str:
        return self.pick(
            [
                self.constant(),
                "s",
                f"row[{self._column(scope)}]",
                f"x[{self.index(scope)}]",
                "inner[0, 1]",
                "hi.sum() * 0.25",
                f"X[{self._row(scope)}, {self._column(scope)}] * 0.5",
            ]
        )

    def tensor_comparison(self, scope) -> str:
        return self.pick(
            [
                f"X[{self._row(scope)}, {self._column(scope)}] > {self.constant()}",
                f"row.sum() > {self.constant()}",
                f"inner.mean() < {self.constant()}",
                f"x[{self.index(scope)}] > hi[0]",
                "lo.sum() > hi.sum()",
                f"s > {self.constant()}",
                f"col[{self._row(scope)}] < 0",
            ]
        )

    def return_value(self, scope) -> str:
        return self.returned

    @classmethod
    def calls(cls, rng, count) -> list[Call]:
        return [
            Call((grid(rng, (ROWS, COLUMNS)), grid(rng, LENGTH), trip_count(rng), python_int(rng)))
            for _ in range(count)
        ]
