"""NumPy functions with no precise rule, run by the generic layer: linear algebra, FFTs,
statistics, shape functions that may return views, functions that write into an argument
(``out=``, ``np.add.at``, ``x.sort()``), lists of tensors (``np.mean([a, b])``), Python values
(``x.item()``, ``x.tolist()``, ``bool(t)``), ``np.vectorize`` and ``np.ndenumerate``, in straight-line code, tensor branches and loops, mixed
with in-place updates of the arrays they read.
"""

from __future__ import annotations

from .base import VectorAndMatrix

LENGTH, ROWS, COLUMNS = VectorAndMatrix.LENGTH, VectorAndMatrix.ROWS, VectorAndMatrix.COLUMNS


class NumpyCalls(VectorAndMatrix):
    name = "numpy_calls"
    summary = "np.linalg, np.fft, np.roll, np.percentile, out=, np.add.at, x.sort(): the generic layer"

    def __init__(self, generator):
        super().__init__(generator)
        self.returned = self.pick(["x, s", "out, A", "s", "x, c, out", "A, s", "np.roll(x, 1), s"])

    def setup(self) -> list[str]:
        return ["s = 0.0", "c = 0", "out = np.zeros(len(x))"]

    def statement(self, scope) -> list[str]:
        v = self.constant()
        forms = [
            ["s = s + np.linalg.norm(x, ord=1)"],
            ["s = s + np.linalg.det(A[:3, :3] + 4.0 * np.eye(3))"],
            ["x = np.roll(x, k)"],
            ["x = np.roll(x, 2) * 0.5 + x"],
            ["s = s + np.percentile(x, 50)"],
            ["out = np.cumprod(np.clip(x, -1.0, 1.0))"],
            ["x = np.diff(x, prepend=0.0)"],
            ["s = s + np.abs(np.fft.rfft(x)).sum()"],
            ["y = np.flip(x)", "s = s + y[0] - y[-1]"],
            [f"np.exp(x * 0.1, out=out, where=x > {v})"],
            ["np.add.at(out, [0, 1, 0], x[:3])"],
            ["out = x.copy()", "out.sort()"],
            ["A = np.rot90(A, 2).copy()"],
            ["s = s + np.polyval([0.5, -1.0, 2.0], x).sum()"],
            ["x[:3] = np.linalg.solve(A[:3, :3] @ A[:3, :3].T + 3.0 * np.eye(3), x[:3])"],
            ["s = s + np.median(A, axis=0).sum()"],
            # lists of tensors (NumPy makes an array of them), Python values read at run time
            ["s = s + np.mean([x.sum(), x.max(), 1.0])"],
            ["x = x + np.max([x[0], x[1]])"],
            ["s = s + x.item(0) + x.max().item()"],
            ["for v in x[:3].tolist():", "    s = s + v * 0.5"],
            ["c = c + int(bool(x[0] > s))"],
            [f"x = x * np.linspace(x[0], {v}, {LENGTH})"],
            ["out = np.vectorize(lambda a: a if a > 0.0 else 0.5 * a)(x)"],
            ["for idx, v in np.ndenumerate(A[:2, :2]):", "    s = s + v * (idx[0] - idx[1])"],
            # writes into an array made from constants (a literal of the build)
            ["cnt = np.zeros(4)", "np.add.at(cnt, [0, 0, 1], 1.0)", "s = s + cnt @ x[:4]"],
            ["D = np.zeros((3, 3))", "np.fill_diagonal(D, 2.0)", "A[:3, :3] = A[:3, :3] + D"],
            # an array made from a list, indexed by and written with tensors
            ["tb = np.array([0.5, 1.5, 2.5, 3.5])", "tb[x[:4] > 0] = 0.0", "s = s + tb[np.argmax(x[:4])]"],
        ]
        return self.pick(forms)

    def idiom(self, scope) -> list[str]:
        i = self.fresh("i")
        inner = self.block(scope.nested(in_loop=True))
        body = ["    " + line for line in inner]
        idioms = [
            [f"for {i} in range(k):", "    x = np.roll(x, 1) * 0.5 + x * 0.5", *body],
            [
                "w = 0",
                "while w < k:",
                "    w = w + 1",
                "    out = np.convolve(out + x, [0.25, 0.5, 0.25], mode='same')",
            ],
            [
                "if s > 1.0:",
                "    y = np.sort(x)[::-1]",
                "else:",
                "    y = np.fft.ifft(np.fft.fft(x)).real",
                "x = x + y",
            ],
            [f"for {i} in range(1, {ROWS}):", f"    A[{i}] = np.roll(A[{i} - 1], 1) * 0.5", *body],
            ["q, r = np.linalg.qr(A)", "s = s + np.abs(r).sum()", "A = q @ r"],
        ]
        return self.pick(idioms)

    def tensor_comparison(self, scope) -> str:
        i = self.index(scope, LENGTH)
        return self.pick([f"x[{i}] > {self.constant()}", "s > 1.0", "c > 3", "np.median(x) > 0.0"])
