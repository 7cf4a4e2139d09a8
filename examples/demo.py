"""dy2st in one screen: convert a NumPy function, show each stage, and check it against NumPy.

    python examples/demo.py

1. ``@dy2st.to_static`` parses the function and rewrites it (``model.code``);
2. calling it stages a static SSA graph for the input signature (``model.graph(...)``);
3. the optimizing passes clean the graph up, and the NumPy backend runs it;
4. the result must equal the eager NumPy result, with the same shape and dtype.

The script exits non-zero if any check fails.
"""

import numpy as np

import dy2st

rng = np.random.default_rng(0)
# Module-level weights: the graph reads them by reference at every call (they are "captures").
WEIGHTS = [rng.standard_normal((16, 16)).astype(np.float32) / 4 for _ in range(3)]
BIAS = np.full(16, 0.1, np.float32)


def gelu(x):
    """The tanh approximation of GELU; a helper that dy2st converts along with its caller."""
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))


def mlp(x, num_layers=2):
    """A small MLP; ``num_layers`` is a Python int, so the loop unrolls while the graph is built."""
    for i in range(num_layers):
        x = gelu(x @ WEIGHTS[i] + BIAS)
    return x.sum(axis=-1), x


static_mlp = dy2st.to_static(mlp)


def section(title: str, text: str) -> None:
    print(f"=== {title}\n{text.rstrip()}\n")


def check(x, **kwargs) -> None:
    """The converted function must give eager NumPy's values, shapes and dtypes."""
    for got, want in zip(static_mlp(x, **kwargs), mlp(x, **kwargs)):
        assert got.shape == want.shape, (got.shape, want.shape)
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def main() -> None:
    x = rng.standard_normal((4, 16)).astype(np.float32)

    section("1. transformed source (static_mlp.code)", static_mlp.code)
    section("2. IR before the passes (graph(x, optimize=False))", str(static_mlp.graph(x, optimize=False)))
    section("3. IR after the passes (graph(x))", str(static_mlp.graph(x)))

    check(x)
    check(rng.standard_normal((4, 16)).astype(np.float32))  # new values: same graph
    assert static_mlp.num_graphs == 1
    check(x, num_layers=3)  # a new Python constant: a new graph with three layers
    assert static_mlp.num_graphs == 2
    print("=== 4. checks\nconverted == eager NumPy (values, shapes, dtypes); graphs built:",
          static_mlp.num_graphs)


if __name__ == "__main__":
    main()
