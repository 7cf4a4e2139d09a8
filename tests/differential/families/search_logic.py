"""Search loops and short-circuit logic: ``for ... else`` under tensor conditions, ``and``/``or``
returning operands, and guarded indexing ``if i < n and x[i] > 0`` (``x[i]`` would be out of
range without the guard, so only Python's short-circuit keeps eager code from raising)."""

from __future__ import annotations

from ..skeleton import indent
from .base import Call, Family, grid, python_int, trip_count

LENGTH = 6


class SearchLogic(Family):
    name = "search_logic"
    summary = "for...else searches under tensor conditions, and/or returning operands, i < n and x[i] > 0"
    parameters = "x, n, k, p"

    def __init__(self, generator):
        super().__init__(generator)
        self.returned = ", ".join(self.rng.sample(["idx", "cnt", "best", "found", "x"], self.rng.randint(1, 3)))

    def setup(self) -> list[str]:
        return ["idx = -1", "cnt = 0", "best = x[0]", "found = False"]

    def statement(self, scope) -> list[str]:
        i, j = self.index(scope, LENGTH), self.index(scope, LENGTH)
        forms = [
            [f"best = x[{i}] > 0 and x[{j}] or {self.pick(['x[0]', 'best', '0.5'])}"],
            [f"best = best if best > x[{i}] else x[{i}]"],
            [f"cnt = cnt or {i}"],
            [f"if {i} < n and x[{i}] > 0:", "    cnt += 1"],
            [f"if {i} + 3 < n and x[{i} + 3] < 0:", f"    idx = {i} + 3"],
            ["found = found or best > 1.0"],
            ["idx = idx if idx >= 0 else cnt"],
            [f"x[{i}] = {self.pick(['best', '-x[0]', '0.0'])}"],
        ]
        return self.pick(forms)

    def idiom(self, scope) -> list[str]:
        i, j = self.fresh("i"), self.fresh("j")
        bound = self.pick(["n", "len(x)", "k"])
        threshold = self.pick(["0.0", "1.0", "best", "x[0]"])
        found_it = self.pick([[f"idx = {i}"], [f"best = x[{i}]", f"idx = {i}"], ["found = True"]])
        not_found = self.pick([["idx = -1"], ["cnt += 1"], ["best = x[0]"]])
        inner = self.block(scope.nested(in_loop=True))
        search = [
            f"for {i} in range({bound}):",
            f"    if x[{i}] > {threshold}:",
            *indent(indent(found_it)),
            "        break",
            *indent(inner),
            "else:",
            *indent(not_found),
        ]
        scan = [f"{i} = 0", f"while {i} < n and x[{i}] <= {threshold}:", f"    {i} += 1", f"idx = {i}"]
        guarded = [
            f"for {i} in range(len(x) + 1):",
            f"    if {i} < n and x[{i}] > {threshold}:",
            "        cnt += 1",
        ]
        distinct = [
            f"for {i} in range({self.pick(['len(x)', 'n'])}):",
            f"    for {j} in range({i}):",
            f"        if x[{j}] == x[{i}]:",
            "            break",
            "    else:",
            "        cnt += 1",
        ]
        return self.pick([search, search, scan, guarded, distinct])

    def tensor_comparison(self, scope) -> str:
        i = self.index(scope, LENGTH)
        return self.pick([f"x[{i}] > 0", f"n > {i}", "best > 0", "cnt > 1", "idx >= 0", "found or x[0] > 0"])

    def return_value(self, scope) -> str:
        return self.returned

    @classmethod
    def calls(cls, rng, count) -> list[Call]:
        return [
            Call((grid(rng, LENGTH, -3, 4), trip_count(rng, LENGTH), trip_count(rng), python_int(rng)))
            for _ in range(count)
        ]
