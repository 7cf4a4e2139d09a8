"""Python numbers carried through tensor loops and branches, and returned.

Counters (``t = 0; t += 1``), floats (``f = f * 0.5``), ints beyond int64 (``big = 2**64 + 1``)
and ints that grow past 2**63 in the loop (``h = 2**62; h = h * 2``), mixed with values taken
from arrays (``int(x[i] > 0)``, ``float(x[i])``, ``len(x)``). Eager Python never overflows and
returns Python ``int``/``float``; the converted function must return the same numbers and types.
"""

from __future__ import annotations

from .base import Call, Family, grid, python_float, python_int, trip_count

LENGTH = 5


class PythonNumbers(Family):
    name = "python_numbers"
    summary = "Python ints/floats (also beyond 2**63) carried through tensor loops and returned"
    parameters = "x, k, p, r"  # r: a Python float, a graph input like p (tests/test_number_inputs.py)

    def __init__(self, generator):
        super().__init__(generator)
        self.returned = self.pick(["t, f, big", "t, h", "f", "big, x", "t + h, f * 2", "t, f, big, h, n"])

    def setup(self) -> list[str]:
        return ["t = 0", "f = 1.0", f"big = 2**64 + {self.rng.randint(0, 9)}", "h = 2**62", "n = len(x)"]

    def statement(self, scope) -> list[str]:
        i = self.index(scope, LENGTH)
        forms = [
            "t = t + 1",
            f"t += {i}",
            "t = t * 2",
            "t = t - n",
            "t = t // 2",
            "t = t % 3",
            "t = -t",
            "t = abs(t - 3)",
            f"t = max(t, {i})",
            f"t = t + int(x[{i}] > 0)",
            f"t = t + len(x) - {i}",
            "f = f * 0.5",
            f"f = f + {i}",
            "f = f / 3",
            "f = f + t",
            f"f = f + float(x[{i}])",
            "f = -f",
            "big = big * 2",
            "big = big + t",
            "big += 1",
            "big = big // 3",
            "h = h * 2",
            "h = h + h // 2",
            f"x[{i}] = x[{i}] + t",
            # type queries answer for the eager value (runtime/type_queries.py)
            f"t = t + int(isinstance(x[{i}], np.floating)) + int(isinstance(x, np.ndarray))",
            "t = t + int(isinstance(f, float)) + int(type(t) is int) + int(isinstance(big, float))",
            "f = f * r",
            "f = f + r * t",
            "t = t + int(r > 0) + p",
            f"x[{i}] = x[{i}] * r",
        ]
        return [self.pick(forms)]

    def tensor_comparison(self, scope) -> str:
        return self.pick(
            [
                f"x[{self.index(scope, LENGTH)}] > {self.constant()}",
                "x.sum() > t",
                "t > 2",
                "f < 0.3",
                "big > 2**65",
                "h > 2**63",
                "r > 0.5",
                "f < r",
            ]
        )

    def use_python_int(self, name: str) -> list[str]:
        return [f"t = t + {name}"]

    def return_value(self, scope) -> str:
        return self.returned

    @classmethod
    def calls(cls, rng, count) -> list[Call]:
        return [Call((grid(rng, LENGTH), trip_count(rng), python_int(rng), python_float(rng))) for _ in range(count)]
