"""Default arguments (also naming module globals) and the exact types of returned values.

``def program(x, k, p=1, scale=2.0, w=W, eps=EPS, limit=LIMIT, flag=True)``, called with some
defaults left out. Each program returns one kind of value per position, from any path (also
early returns under tensor conditions): Python ``int``/``float``/``bool``, NumPy scalars,
0-d arrays, arrays. Results are compared by exact type: ``np.float64(1.0)`` is not ``1.0``.
"""

from __future__ import annotations

from .base import Call, Family, grid, python_int, trip_count

LENGTH = 4
RETURN_KINDS = {
    "python int": ["len(x)", "limit", "x.shape[0]", "x.ndim", "p + 1", "limit * 2", "int(x.sum() > 0)"],
    "python float": ["scale * 2", "eps", "float(x[{i}])", "scale + eps", "float(y.sum())"],
    "python bool": ["flag", "flag and p > 0", "x.size > 3", "bool(limit)", "not flag"],
    "numpy float": ["x.sum()", "x[{i}]", "np.float64(scale)", "y.max()", "(x * w).sum()", "np.float64(0.5)"],
    "numpy int": ["(x > 0).sum()", "np.int64(limit)", "np.argmax(x)", "x.argmin()"],
    "numpy bool": ["x.any()", "np.all(y > 0)", "np.bool_(flag)", "x[{i}] > 0"],
    "0-d array": ["np.array(scale)", "np.zeros(())", "np.asarray(y.sum())", "np.array(x[{i}])"],
    "array": ["y", "y * scale", "x + w"],
}


class DefaultsReturns(Family):
    name = "defaults_returns"
    summary = "defaults naming globals; returns of Python int/float/bool, NumPy scalars, 0-d arrays, tuples"
    parameters = "x, k, p=1, scale=2.0, w=W, eps=EPS, limit=LIMIT, flag=True"

    def __init__(self, generator):
        super().__init__(generator)
        self.kinds = self.rng.sample(sorted(RETURN_KINDS), self.rng.randint(1, 3))

    def prelude(self) -> list[str]:
        return ["W = np.linspace(-1.0, 1.0, 4)", "EPS = 1e-3", "LIMIT = 2"]

    def setup(self) -> list[str]:
        return ["y = x * 1.0"]

    def statement(self, scope) -> list[str]:
        i = self.index(scope, LENGTH)
        forms = [
            ["y = y * scale + w"],
            ["y = y + eps"],
            [f"y[{i}] = {self.pick([self.constant(), 'scale', f'w[{i}]'])}"],
            ["if flag:", "    y = -y"],
            ["y = np.clip(y, -limit, limit)"],
            [f"y = y + x[{i}] * scale"],
            ["w[0] += 1.0"],  # changes the default, which is the global W
        ]
        return self.pick(forms)

    def tensor_comparison(self, scope) -> str:
        i = self.index(scope, LENGTH)
        return self.pick([f"x[{i}] > 0", f"y.sum() > {self.constant()}", "y.max() > limit", "x.mean() < eps"])

    def return_value(self, scope) -> str:
        i = self.index(scope, LENGTH)
        values = [self.pick(RETURN_KINDS[kind]).format(i=i) for kind in self.kinds]
        return ", ".join(values)

    @classmethod
    def calls(cls, rng, count) -> list[Call]:
        calls = []
        for _ in range(count):
            args = (grid(rng, LENGTH), trip_count(rng))
            if rng.random() < 0.3:
                args += (python_int(rng),)
            optional = {
                "scale": float(rng.integers(1, 4)) * 0.5,
                "w": grid(rng, LENGTH),
                "eps": 0.25,
                "limit": int(rng.integers(1, 4)),
                "flag": bool(rng.integers(2)),
            }
            kwargs = {name: value for name, value in optional.items() if rng.random() < 0.25}
            calls.append(Call(args, kwargs))
        return calls
