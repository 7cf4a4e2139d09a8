"""Control flow over a few carried variables: the generator's original family.

A 0-d float (``s``), 1-d floats (``v`` rebound, ``u`` updated in place: a tensor loop carries an
array one way or the other, not both) and a 0-d int (``c``), under every skeleton construct,
with chained comparisons and ternaries in the conditions and assignments.
"""

from __future__ import annotations

from .base import Call, Family, grid, python_int, trip_count

VECTOR_LENGTH = 4


class ControlFlow(Family):
    name = "control_flow"
    summary = "nested if/while/for, break/continue/return, and/or/not over 0-d and 1-d carried values"
    parameters = "x, y, k, p"

    def setup(self) -> list[str]:
        return ["s = y * 1.0", "v = x * 1.0", "u = x * 2.0", "c = k * 1"]

    def statement(self, scope) -> list[str]:
        target = self.pick(["s", "s", "v", "u_item", "c"])
        if target == "s":
            form = self.pick(["s = s * 0.5 + {f}", "s = {f} - s", "s = s + ({f} if {p} else -1.0)"])
            return [form.format(f=self._float(scope), p=self.predicate(scope))]
        if target == "v":
            form = self.pick(["v = v * 0.5 + {f}", "v = np.maximum(v, {f})", "v = v - x * 0.25"])
            return [form.format(f=self._float(scope))]
        if target == "u_item":
            return [f"u[{self._index(scope)}] = {self._float(scope)}"]
        return [self.pick(["c = c + 1", "c = c - 1", "c = c * 2 - 1"])]

    def _index(self, scope) -> str:
        return self.pick(["0", "3", *scope.indices()])

    def _float(self, scope) -> str:
        atoms = ["s", "y", "np.sum(v) * 0.25", "c * 0.5", "1.5", "-0.5", f"v[{self._index(scope)}]", "u[1]"]
        if scope.python_index:
            atoms.append(f"x[{scope.python_index}] * {scope.python_index}")
        return self.pick(atoms)

    def tensor_comparison(self, scope) -> str:
        options = [
            f"s > {self.pick(['0.0', '1.0', '-1.0'])}",
            f"np.sum(v) < {self.pick(['0.0', '2.0'])}",
            f"v[{self._index(scope)}] > s",
            "c > 1",
            "c % 2 == 0",
            "y < s",
            "-1.0 < s < 2.0",
        ]
        if scope.python_index:
            options.append(f"x[{scope.python_index}] > 0")
        return self.pick(options)

    def return_value(self, scope) -> str:
        return f"{self.pick(['s', 's * 2.0', 's + c'])}, {self.pick(['v', 'v - 1.0', 'v * s'])}, u"

    def use_python_int(self, name: str) -> list[str]:
        return [f"s = s + {name} * 0.5"]

    @classmethod
    def calls(cls, rng, count) -> list[Call]:
        return [Call((grid(rng, VECTOR_LENGTH), grid(rng, ()), trip_count(rng), python_int(rng))) for _ in range(count)]
