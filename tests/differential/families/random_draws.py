"""Random draws: a module-level ``rng``, a Generator argument ``g`` and legacy ``np.random``.

Draws sit in tensor loops, tensor branches and conditions (``if rng.random() < 0.5``). Both
sides start from the same states (the module's ``rng`` and ``np.random.seed``, a fresh copy of
``g``) and make the same calls one after the other, so they must draw the same numbers call
after call and leave every generator in the same state.
"""

from __future__ import annotations

import numpy as np

from .base import Call, Family, grid, python_int, trip_count

LENGTH = 4


class RandomDraws(Family):
    name = "random"
    summary = "draws from a global rng, a Generator argument and legacy np.random in loops and branches"
    parameters = "x, g, k, p"

    def __init__(self, generator):
        super().__init__(generator)
        self.returned = self.pick(["y, s", "y, s, x", "s", "y.sum() + s, x"])

    def prelude(self) -> list[str]:
        return ["rng = np.random.default_rng(1234)"]

    def setup(self) -> list[str]:
        return ["y = x.copy()", self.pick(["s = rng.random()", "s = g.normal()", "s = np.random.rand()"])]

    def statement(self, scope) -> list[str]:
        i = self.index(scope, LENGTH)
        m = self.fresh("m")
        forms = [
            ["y = y + rng.normal(size=4)"],
            ["y = y * np.random.rand(4)"],
            ["s = s + g.random()"],
            ["s = s + np.random.normal()"],
            ["s = s * 0.5 + rng.exponential()"],
            ["s = s + np.random.randint(5)"],
            [f"x[{i}] = rng.standard_normal()"],
            [f"x[{i}] += g.uniform(-1.0, 1.0)"],
            [f"{m} = rng.integers(4)", f"y[{m}] += 1.0"],
            ["y = g.permutation(y)"],  # shuffle(y) is refused by design, with this rewrite
            ["y = y[g.permutation(4)]"],
            ["y = y + g.choice(x, size=4)"],
            ["y = y + g.normal(loc=x, scale=1.0)"],
            [f"np.random.seed({self.pick(['p', '7', 'p + 1'])})"],
        ]
        return self.pick(forms)

    def tensor_comparison(self, scope) -> str:
        return self.pick(
            [
                "rng.random() < 0.5",
                "g.random() > 0.3",
                "np.random.rand() < 0.5",
                f"x[{self.index(scope, LENGTH)}] > 0",
                "s > 0.5",
                f"y.sum() > {self.constant()}",
            ]
        )

    def return_value(self, scope) -> str:
        return self.returned

    @classmethod
    def calls(cls, rng, count) -> list[Call]:
        calls = []
        for _ in range(count):
            seed = int(rng.integers(1000))
            generator = np.random.default_rng(seed)
            args = (grid(rng, LENGTH), generator, trip_count(rng), python_int(rng))
            calls.append(Call(args, spelled={1: f"np.random.default_rng({seed})"}))
        return calls
