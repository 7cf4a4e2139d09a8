"""Tensor ``if``s and ternaries whose two sides have different, broadcast-compatible shapes.

``a - (x if c > 0 else 0.1)``, ``scale = s if c else 1.0; y = x * scale``, ``if ...: t = x
else: t = 0.5``: NumPy broadcasts whichever side was taken, so the arithmetic afterwards gives
the same shape on both paths (the other operand has the full shape).
"""

from __future__ import annotations

from .base import Call, Family, grid, python_int, trip_count

LENGTH, ROWS = 4, 3


class BroadcastBranches(Family):
    name = "broadcast_branches"
    summary = "if/ternary sides of different broadcastable shapes used in arithmetic (x - (x if c else 0.1))"
    parameters = "x, M, c, k, p"

    def setup(self) -> list[str]:
        return ["y = x * 1.0", "Y = M * 1.0"]

    def statement(self, scope) -> list[str]:
        cond, i = self.predicate(scope), self.index(scope)
        scale = self.fresh("scale")
        forms = [
            [f"y = y - (x if {cond} else 0.1)"],
            [f"{scale} = c if {cond} else 1.0", f"y = x * {scale}"],
            [f"{scale} = x if {cond} else x[{i}]", f"y = y + {scale}"],
            [f"{scale} = M[{i}] if {cond} else c", f"Y = Y * {scale}"],
            [f"y = y + (c if {cond} else x)"],
            [f"Y = Y + (x if {cond} else M)"],
            [f"Y = Y - (M.mean(axis=0) if {cond} else M.mean())"],
            ["y = np.where(x > 0, y, 0.0)"],
            [f"y = y * 0.5 + c * {self.constant()}"],
        ]
        return self.pick(forms)

    def idiom(self, scope) -> list[str]:
        t = self.fresh("t")
        cond = self.predicate(scope)
        forms = [
            [f"if {cond}:", f"    {t} = x", "else:", f"    {t} = 0.5", f"y = y * {t}"],
            [f"if {cond}:", f"    {t} = M.mean(axis=0)", "else:", f"    {t} = M.mean()", f"Y = Y - {t}"],
            [f"{t} = 1.0", f"if {cond}:", f"    {t} = M[{self.index(scope)}]", f"Y = Y / (1.0 + np.abs({t}))"],
            [f"{t} = 0.0", f"for j{t} in range(k):", f"    {t} = {t} + x", f"y = y - {t}"],
        ]
        return self.pick(forms)

    def tensor_comparison(self, scope) -> str:
        return self.pick(
            [
                "c > 0",
                f"x[{self.index(scope)}] > c",
                f"y.sum() < {self.constant()}",
                f"M[0, {self.index(scope)}] > 0",
                f"Y.mean() > {self.constant()}",
            ]
        )

    def return_value(self, scope) -> str:
        return "y, Y"

    @classmethod
    def calls(cls, rng, count) -> list[Call]:
        return [
            Call((grid(rng, LENGTH), grid(rng, (ROWS, LENGTH)), grid(rng, ()), trip_count(rng), python_int(rng)))
            for _ in range(count)
        ]
