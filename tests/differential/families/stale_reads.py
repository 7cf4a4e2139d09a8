"""Indexed updates while an older value of the array is still read.

Updates run in the array's own buffer where the old value is dead, so every way the graph keeps
an old value alive must stop that: a copy the graph simplifies away (``old = L * 1.0`` is ``L``
itself once simplified, ``keep = A * 1.0`` the argument ``A``), two ``np.zeros`` merged into one
value, a row snapshot (``snap = L[r] * 1.0``, a view of the old ``L``), an index array that is the
updated array. Around them run the row loops of factorizations, recurrences and stencils
(``A[t, :] = f(A[t - 1, :])``, ``L[j + 1:, j] = (A[j + 1:, j] - L[j + 1:, :j] @ L[j, :j]) * 0.5``,
``A[1:-1] = 0.25 * (A[:-2] + A[2:])``), on fresh arrays and on the caller's ``A`` and ``x``.
"""

from __future__ import annotations

from ..skeleton import indent
from .base import Call, Family, grid, python_int, trip_count

ROWS, COLUMNS = 4, 4
RETURNABLE = ["L", "Z", "old", "keep", "A", "acc", "snap", "x", "L.sum()", "A[0]", "old[1] + snap"]


class StaleReads(Family):
    name = "stale_reads"
    summary = "A[i] = v while an old value is read: simplified copies, merged zeros, snapshots; row loops"
    parameters = "A, x, k, p"

    def __init__(self, generator):
        super().__init__(generator)
        self.returned = ", ".join(self.rng.sample(RETURNABLE, self.rng.randint(1, 3)))

    def setup(self) -> list[str]:
        return [
            f"L = np.zeros(({ROWS}, {COLUMNS}))",
            f"Z = np.zeros(({ROWS}, {COLUMNS}))",  # one value with L after CSE, two arrays eagerly
            "old = L * 1.0",
            "keep = A * 1.0",
            "snap = L[0] * 1.0",
            f"acc = np.zeros({COLUMNS})",
        ]

    def statement(self, scope) -> list[str]:
        r, q, c, f = self._row(scope), self._row(scope), self._column(scope), self._float(scope)
        width = self.pick(["1", "2", "3"])  # a slice bound: a tensor one would be refused
        updates = [
            f"L[{r}] = x * {f}",
            f"L[{r}, :{width}] -= L[{q}, :{width}] * 0.5",
            f"L[{r}] += A[{q}]",
            f"L[{r}] = L[{q}]",
            f"L.T[{c}] += 1.0",
            f"Z[{r}, {c}] = {f}",
            f"A[{r}] = A[{q}] * 0.5 + 1.0",
            "A[1:] = A[:-1]",
            f"keep[{r}, {c}] = {f}",
            f"x[{c}] = {f}",
            "x[x.astype(np.int64) % 4] = 0.5",
        ]
        reads = [
            "old = L * 1.0",
            f"snap = L[{r}] * 1.0",
            f"acc = acc + old[{r}]",
            "acc = acc + snap",
            f"acc = acc - keep[{r}]",
            f"acc = acc * 0.5 + Z[{r}]",
        ]
        if self.rng.random() < 0.3:
            # The pattern itself: keep the old value, update, read the old value.
            return [self.pick(reads[:2]), self.pick(updates), self.pick(reads[2:])]
        return [self.pick(updates + reads)]

    def idiom(self, scope) -> list[str]:
        t = self.fresh("t")
        bound = self.pick(["k", "k + 1", f"{ROWS}"])
        inner = self.block(scope.nested(in_loop=True, tensor_index=t if bound != f"{ROWS}" else None))
        recurrence = [
            f"for {t} in range(1, {bound}):",
            f"    A[{t}, :] = np.tanh(A[{t} - 1, :]) * 0.5 + x",
            *indent(inner),
        ]
        factorization = [
            f"for {t} in range({self.pick(['p + 1', f'{COLUMNS}'])}):",
            f"    L[{t}, {t}] = np.sqrt(np.abs(A[{t}, {t}] - L[{t}, :{t}] @ L[{t}, :{t}]) + 1.0)",
            f"    L[{t} + 1:, {t}] = (A[{t} + 1:, {t}] - L[{t} + 1:, :{t}] @ L[{t}, :{t}]) / L[{t}, {t}]",
        ]
        stencil = [f"for {t} in range(k):", "    A[1:-1] = 0.25 * (A[:-2] + A[2:]) + 0.5 * A[1:-1]", *indent(inner)]
        snapshot = [
            f"for {t} in range(k):",
            "    old = L * 1.0",
            f"    L[{t}] = x * {t}",
            f"    acc = acc + old[{t}]",
        ]
        return self.pick([recurrence, factorization, stencil, snapshot])

    def _row(self, scope) -> str:
        return self.index(scope, ROWS)

    def _column(self, scope) -> str:
        return self.index(scope, COLUMNS)

    def _float(self, scope) -> str:
        return self.pick([self.constant(), f"x[{self._column(scope)}]", f"A[{self._row(scope)}, 0]", "acc[1]"])

    def tensor_comparison(self, scope) -> str:
        return self.pick(
            [
                f"L.sum() > {self.constant()}",
                f"A[{self._row(scope)}, {self._column(scope)}] > 0",
                f"acc[0] < {self.constant()}",
                f"old.mean() > {self.constant()}",
                f"x[{self._column(scope)}] > snap[0]",
            ]
        )

    def return_value(self, scope) -> str:
        return self.returned

    @classmethod
    def calls(cls, rng, count) -> list[Call]:
        return [
            Call((grid(rng, (ROWS, COLUMNS)), grid(rng, COLUMNS), trip_count(rng), python_int(rng)))
            for _ in range(count)
        ]
