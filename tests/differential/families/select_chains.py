"""``np.where`` inside elementwise chains, on arrays large enough to run as tiled fused kernels.

``np.where(x > 0.5, x * 0.5, x - 1.0) + 0.25``, NaN clean-ups (``np.where(x != x, 0.0, x)``), a
ReLU and its adjoint's halved ties (``np.where(x == 0, 0.5, 1.0)``), a row broadcast into a
matrix select (``np.where(M < r, r, M)``), selects of booleans, integer selects summed, and a
select summed over rows (a fused row reduction). The inputs hold NaN, inf and signed zeros, so
the bits of every select are checked; the vector spans two fused tiles, the matrix one.
"""

from __future__ import annotations

import numpy as np

from .base import Call, Family, grid, python_int, trip_count

LENGTH = 70_000  # float32: more than one fused tile (65536 elements), above the unfused size
ROWS, COLUMNS = 70, 40  # float64: one tile, above the size small groups run unfused


class SelectChains(Family):
    name = "select_chains"
    summary = "np.where in elementwise chains on tiled arrays: NaN/inf/-0.0, broadcast rows, bool and int selects"
    parameters = "x, M, r, k, p"

    def __init__(self, generator):
        super().__init__(generator)
        # One return value per program: an early return must give what the last one gives.
        self.returned = self.pick(["x, M", "x.sum(), M, c", "x, t", "M.sum(axis=0), r"])

    def setup(self) -> list[str]:
        return ["c = k * 0", "t = x[0] * 0.0"]

    def statement(self, scope) -> list[str]:
        v, w = self.constant(), self.constant()
        forms = [
            [f"x = np.where(x > {v}, x * 0.5, x - 1.0) + 0.25"],
            ["x = np.where(x != x, 0.0, x) * 2.0"],
            [f"x = np.where(x < {v}, {w}, x) - 0.5"],
            ["x = np.maximum(x, 0.0) * np.where(x == 0, np.float32(0.5), np.float32(1.0))"],
            [f"x = np.where(np.isinf(x), -0.0, x * {v})"],
            ["x = np.where(x > 1.0, np.inf, x) * 0.5"],
            ["M = np.where(M < r, r, M) - 0.5"],
            [f"M = np.where(M > {v}, M, -0.0) + M * 0.0"],
            ["M = np.where(M * r > 0, M, r * 2.0)"],
            ["mask = np.where(x > 0, x < 2.0, False)", "x = np.where(mask, x, 1.0)"],
            ["c = c + np.where(x > 0, 1, -1).sum()"],
            ["M = M - np.where(M > 0, M, 0.0).sum(axis=1, keepdims=True) * 0.125"],
            ["t = t + np.where(x > t, x - t, 0.0).sum()"],
        ]
        return self.pick(forms)

    def idiom(self, scope) -> list[str]:
        i = self.fresh("i")
        body = ["    " + line for line in self.block(scope.nested(in_loop=True))]
        idioms = [
            [f"for {i} in range(k):", "    x = np.where(x > 0, x * 0.5, x + 1.0)", *body],
            ["if x.sum() > 0:", "    M = np.where(M > 0, M, r)", "else:", "    M = np.where(M < 0, M, -r)"],
        ]
        return self.pick(idioms)

    def tensor_comparison(self, scope) -> str:
        i = self.index(scope)
        return self.pick([f"x[{i}] > {self.constant()}", "M.sum() > 0", f"np.isnan(x[{i}])", "c > 100"])

    def return_value(self, scope) -> str:
        return self.returned

    def use_python_int(self, name: str) -> list[str]:
        return [f"c = c + {name}"]

    @classmethod
    def calls(cls, rng: np.random.Generator, count: int) -> list[Call]:
        return [
            Call(
                (
                    _with_specials(rng, grid(rng, LENGTH).astype(np.float32)),
                    _with_specials(rng, grid(rng, (ROWS, COLUMNS))),
                    grid(rng, COLUMNS),
                    trip_count(rng),
                    python_int(rng),
                )
            )
            for _ in range(count)
        ]


def _with_specials(rng: np.random.Generator, values: np.ndarray) -> np.ndarray:
    """A few NaNs and infinities of both signs among the grid values."""
    flat = values.reshape(-1)
    for special in (np.nan, np.inf, -np.inf):
        flat[rng.integers(0, flat.size, 3)] = special
    return values
