"""Double buffering: loops that write one buffer and swap the names (``a, b = b, a``).

Stencils and time steppers over argument arrays and buffers made in the function, with the
swap written as a tuple assignment or through a temporary, three-way rotations, element loops
writing ``b[i]`` inside the step, tensor ``while`` loops, trip counts that are Python ints
(constants, or a number argument that becomes a graph input), statements of the skeleton inside
the step, and updates and reads of the rotated arrays after the loop. Each rolls into one loop
carrying a rotation counter (runtime/control_flow/rotations.py); the caller's arrays end as eager
code leaves them, and a returned array is the very argument eager code returns.
"""

from __future__ import annotations

from ..skeleton import indent
from .base import Call, Family, grid, python_int, trip_count

LENGTH = 8


class BufferSwaps(Family):
    name = "buffer_swaps"
    summary = "a, b = b, a after a stencil step: rolled loops rotating buffers, both tiers"
    parameters = "a, b, k, p"

    def __init__(self, generator):
        super().__init__(generator)
        self.returned = self.pick(["a", "a, b", "b", "s, a", "a.sum(), b", "b, a, s"])

    def setup(self) -> list[str]:
        return ["s = 0.0"]

    def statement(self, scope) -> list[str]:
        i = self.index(scope, LENGTH)
        forms = [
            [f"s = s + a[{i}]"],
            [f"b[{i}] = b[{i}] + {self.constant()}"],
            ["a[1:-1] = a[1:-1] * 0.5"],
            ["s = s + b.sum()"],
            [f"a[{i}] = s"],
        ]
        return self.pick(forms)

    def idiom(self, scope) -> list[str]:
        t, i = self.fresh("t"), self.fresh("i")
        steps = self.pick(["5", "6", "9", "p + 5", "2 * p + 5"])
        inner = indent(self.block(scope.nested(in_loop=True))) if self.rng.random() < 0.3 else []
        step = self.pick(
            [
                ["    b[1:-1] = 0.5 * (a[:-2] + a[2:])"],
                ["    b[1:-1] = a[1:-1] + 0.25 * (a[2:] - 2 * a[1:-1] + a[:-2])"],
                [f"    for {i} in range(1, len(a) - 1):", f"        b[{i}] = 0.5 * (a[{i} - 1] + a[{i} + 1])"],
                ["    b[:] = a * 0.5", "    b[0] += 1.0"],
            ]
        )
        swap = self.pick([["    a, b = b, a"], ["    tmp = a", "    a = b", "    b = tmp"]])
        after = self.pick([[], ["a[0] = -1.0"], ["s = s + a.sum() - b.sum()"], ["b += 1.0"]])
        rolled = [f"for {t} in range({steps}):", *step, *inner, *swap, *after]
        accumulate = [
            f"for {t} in range({steps}):",
            *step,
            "    s = s + b[1]",
            *swap,
        ]
        own_buffer = [
            self.pick(["u = np.zeros_like(a)", "u = a.copy()", "u = np.full_like(a, 0.5)"]),
            f"for {t} in range({steps}):",
            "    u[1:-1] = 0.5 * (a[:-2] + a[2:])",
            "    a, u = u, a",
            "s = s + u.sum()",
        ]
        three = [
            "c = b * 0.5",
            f"for {t} in range({steps}):",
            "    c[1:-1] = (a[1:-1] + b[:-2] + b[2:]) / 3",
            "    a, b, c = b, c, a",
            "s = s + c[0]",
        ]
        tensor_while = [
            f"{t} = 0",
            f"while {t} < k + {self.pick(['2', '5'])}:",
            *step,
            *swap,
            f"    {t} += 1",
        ]
        converge = [
            "err = np.abs(a).max() + 1.0",
            "while err > 0.5:",
            "    b[1:-1] = 0.5 * (a[:-2] + a[2:])",
            "    b[0], b[-1] = a[0], a[-1]",
            "    err = np.abs(b - a).max()",
            "    a, b = b, a",
            "s = s + err",
        ]
        return self.pick([rolled, rolled, accumulate, own_buffer, three, tensor_while, converge])

    def tensor_comparison(self, scope) -> str:
        i = self.index(scope, LENGTH)
        return self.pick([f"a[{i}] > {self.constant()}", "s > 1.0", "b.sum() > 0"])

    def return_value(self, scope) -> str:
        return self.returned

    @classmethod
    def calls(cls, rng, count) -> list[Call]:
        return [Call((grid(rng, LENGTH), grid(rng, LENGTH), trip_count(rng), python_int(rng))) for _ in range(count)]
