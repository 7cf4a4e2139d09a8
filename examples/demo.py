"""dy2st in one screen: convert a NumPy function, show each stage, and check it against NumPy.

    python examples/demo.py

1. ``@dy2st.to_static`` parses the function and rewrites its control flow (``model.code``);
2. calling it stages a static SSA graph for the input signature (``model.graph(...)``): the
   ``if`` on the tensor ``flag`` becomes a ``cond`` op with both branches as regions;
3. the optimizing passes clean the graph up and fuse elementwise ops; the NumPy backend runs it;
4. the result must equal the eager NumPy result, with the same shape and dtype.

The script exits non-zero if any check fails.
"""

import numpy as np

import dy2st

rng = np.random.default_rng(0)
# Module-level weights: the graph reads them by reference at every call (they are "captures").
W1 = rng.standard_normal((16, 16)).astype(np.float32) / 4
W2 = rng.standard_normal((16, 16)).astype(np.float32) / 4
b = np.full(16, 0.1, np.float32)


def gelu(x):
    """The tanh approximation of GELU; a helper that dy2st converts along with its caller."""
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))


def model(x, flag):
    """Pick a weight matrix by a tensor flag, then a bias and an activation."""
    if flag > 0:  # flag is a 0-d array: this `if` becomes a `cond` op in the graph
        y = x @ W1
    else:
        y = x @ W2
    return gelu(y + b)


static_model = dy2st.to_static(model)


def section(title: str, text: str) -> None:
    print(f"=== {title}\n{text.rstrip()}\n")


def check(x, flag) -> None:
    """The converted function must give eager NumPy's values, shape and dtype."""
    got, want = static_model(x, flag), model(x, flag)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def main() -> None:
    x = rng.standard_normal(16).astype(np.float32)
    flag = np.array(1)

    section("1. transformed source (static_model.code)", static_model.code)
    section(
        "2. IR before the passes (graph(x, flag, optimize=False))", str(static_model.graph(x, flag, optimize=False))
    )
    section("3. IR after the passes (graph(x, flag))", str(static_model.graph(x, flag)))

    for new_flag in (1, 0, -3):  # both branches, one graph: the flag is a tensor
        check(x, np.array(new_flag))
    check(rng.standard_normal(16).astype(np.float32), flag)  # new values: same graph
    assert static_model.num_graphs == 1
    check(rng.standard_normal((4, 16)).astype(np.float32), flag)  # a batch: a new shape, a new graph
    assert static_model.num_graphs == 2
    print(
        "=== 4. checks\nconverted == eager NumPy (values, shapes, dtypes) for both branches; graphs built:",
        static_model.num_graphs,
    )


if __name__ == "__main__":
    main()
