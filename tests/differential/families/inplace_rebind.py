"""In-place updates and rebinding of the same name in tensor loops and branches.

A fresh local (``acc = np.zeros(3)``) and an argument (``v``) are both updated in place
(``acc += x[i]``, ``v[j] -= 1.0``) and rebound (``acc = acc / 2``, ``v = v * 0.5``), with an
alias (``snap = acc``) that sees the in-place updates until ``acc`` is rebound. Eager NumPy
updates the caller's ``v`` only until it is rebound.
"""

from __future__ import annotations

from .base import Call, Family, grid, python_int, trip_count

ROWS, WIDTH = 4, 3


class InplaceRebind(Family):
    name = "inplace_rebind"
    summary = "acc += x[i]; acc = acc / 2 (fresh locals and arguments) in tensor loops and branches"
    parameters = "x, v, k, p"

    def __init__(self, generator):
        super().__init__(generator)
        self.aliased = self.rng.random() < 0.3
        extra = ["snap"] if self.aliased else []
        self.returned = ", ".join(self.rng.sample(["acc", "v", "acc * 2.0", "v.sum()", *extra], 2))

    def setup(self) -> list[str]:
        return ["acc = np.zeros(3)"] + (["snap = acc"] if self.aliased else [])

    def statement(self, scope) -> list[str]:
        i, j, f = self.index(scope, ROWS), self.index(scope, WIDTH), self._float(scope)
        updates = [
            f"acc += x[{i}]",
            "acc *= 0.5",
            f"acc[{j}] = {f}",
            "acc -= acc.mean()",
            f"v += {f}",
            f"v[{j}] -= 1.0",
            "v -= acc",
            f"v += x[{i}] * {f} - 1.0",  # a fused group writing v's new value into v
            "v -= 0.5 * (v - acc)",
        ]
        rebinds = [
            "acc = acc / 2",
            "acc = acc + v",
            "acc = np.maximum(acc, v)",
            "acc = v.copy()",
            "v = v * 0.5",
            f"v = v + x[{i}]",
        ]
        if self.aliased:
            updates.append("snap += 1.0")
        if self.rng.random() < 0.3:
            # The pattern itself: update in place, then rebind, one after the other.
            return [self.pick(updates), self.pick(rebinds)]
        return [self.pick(updates + rebinds)]

    def _float(self, scope) -> str:
        return self.pick([self.constant(), f"acc[{self.index(scope, WIDTH)}]", f"x[{self.index(scope, ROWS)}, 0]"])

    def tensor_comparison(self, scope) -> str:
        return self.pick(
            [
                f"acc.sum() > {self.constant()}",
                f"v[{self.index(scope, WIDTH)}] > 0",
                f"x[{self.index(scope, ROWS)}].max() > acc[0]",
            ]
        )

    def return_value(self, scope) -> str:
        return self.returned

    @classmethod
    def calls(cls, rng, count) -> list[Call]:
        return [
            Call((grid(rng, (ROWS, WIDTH)), grid(rng, WIDTH), trip_count(rng), python_int(rng))) for _ in range(count)
        ]
