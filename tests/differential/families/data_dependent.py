"""Results whose size depends on the data: boolean masks read and written, ``np.nonzero`` and its
family, ``np.unique``, ``np.compress``/``extract``, ``np.putmask``, slices bounded by tensors
(``x[:k]``, CSR-style ``x[ptr[i]:ptr[i + 1]]``, ``x[:i]`` in a rolled loop), the length of a
masked array tested in a tensor ``if`` or bounding a loop, and branches that give masked arrays
of different sizes.
"""

from __future__ import annotations

from .base import VectorAndMatrix

LENGTH, ROWS, COLUMNS = VectorAndMatrix.LENGTH, VectorAndMatrix.ROWS, VectorAndMatrix.COLUMNS


class DataDependent(VectorAndMatrix):
    name = "data_dependent"
    summary = "masks, nonzero, unique, compress, tensor-bounded slices: sizes known only from the data"

    def __init__(self, generator):
        super().__init__(generator)
        self.returned = self.pick(
            ["x, s, c", "out, A", "s", "x[x > 0], s", "np.nonzero(A > 1.0)[1], c", "A, out, s", "x, c, out"]
        )

    def setup(self) -> list[str]:
        return ["s = 0.0", "c = 0", "out = np.zeros(len(x))"]

    def threshold(self) -> str:
        return self.pick(["0.0", "1.0", "-1.0", "0.5", "2.0", "3.5"])

    def statement(self, scope) -> list[str]:
        t, v = self.threshold(), self.constant()
        forms = [
            [f"s = s + x[x > {t}].sum()"],
            [f"x[x < {t}] = {v}"],
            [f"x[x > {t}] *= 0.5"],
            [f"A[A[:, 0] > {t}] += 1.0"],
            [f"A[:, A[1] < {t}] = A[:, A[1] < {t}] * 2.0"],
            [f"c = c + np.count_nonzero(x > {t})"],
            [f"s = s + x[np.flatnonzero(x > {t})].sum()"],
            ["out[:k] = x[:k] * 2.0"],
            ["s = s + x[k:].sum() - x[:k].sum()"],
            [f"np.putmask(x, x > {t}, {v})"],
            ["s = s + np.unique(np.round(x)).sum()"],
            [f"s = s + np.compress(x > {t}, x).sum() * len(np.compress(x > {t}, x))"],
            [f"s = s + A[np.nonzero(A > {t})].sum()"],
            [f"s = s + np.extract(A > {t}, A).sum()"],
            [f"s = s + (x[x > {t}] - x[x > {t}].mean() if np.any(x > {t}) else x[:0]).sum()"],
            [f"c = c + len(np.argwhere(A < {t}))"],
        ]
        return self.pick(forms)

    def idiom(self, scope) -> list[str]:
        i, t = self.fresh("i"), self.threshold()
        inner = self.block(scope.nested(in_loop=True))
        body = ["    " + line for line in inner]
        idioms = [
            # the length of a masked array in a tensor if, and bounding a loop
            [f"pos = x[x > {t}]", "if len(pos) > 2:", "    s = s + pos[0] + pos[-1]", "else:", "    c = c + len(pos)"],
            [f"pos = x[x > {t}]", f"for {i} in range(len(pos)):", f"    s = s + pos[{i}] * {i}", *body],
            # branches giving masked arrays of different sizes
            ["if s > 1.0:", f"    y = x[x > {t}]", "else:", f"    y = x[x <= {t}] * 2.0", "s = s + y.sum() + len(y)"],
            # slices bounded by the counter of a rolled loop (factorizations, prefix sums)
            [f"for {i} in range(1, len(x)):", f"    out[{i}] = out[:{i}].sum() * 0.5 + x[{i}]"],
            [
                f"for {i} in range({ROWS}):",
                f"    A[{i}, :{i} % {COLUMNS}] = A[{i}, :{i} % {COLUMNS}] - A[{i} - 1, :{i} % {COLUMNS}] * 0.5",
            ],
            [f"for {i} in range(len(x) - 1):", f"    x[{i} + 1:] = x[{i} + 1:] - x[{i}] * 0.25"],
            # CSR-style segments
            [
                "ptr = np.array([0, 2, 2, 5, 8])",
                f"for {i} in range(4):",
                f"    out[{i}] = x[ptr[{i}]:ptr[{i} + 1]].sum()",
            ],
            # a data-dependent count as a slice bound, in a tensor loop
            [
                f"n = np.count_nonzero(x > {t})",
                "out[:n] = np.sort(x)[:n]",
                "w = 0",
                "while w < k:",
                "    w = w + 1",
                f"    out[x > {t}] += 1.0",
                *body,
            ],
        ]
        return self.pick(idioms)

    def tensor_comparison(self, scope) -> str:
        i = self.index(scope, LENGTH)
        return self.pick(
            [f"x[{i}] > {self.constant()}", "s > 1.0", "c > 3", "np.count_nonzero(x > 0) > 3", "len(x[x < 0]) > 1"]
        )
