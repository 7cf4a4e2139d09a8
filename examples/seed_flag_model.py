"""The seed model with a tensor flag: ``if flag > 0`` becomes a ``cond`` op in the graph.

``flag`` is a 0-d array, so its value is only known when the graph runs: both branches are staged
into the two regions of one ``cond``, and one cached graph serves both values of the flag.

Run it as a script; it exits non-zero if the converted model disagrees with eager NumPy.
"""

import numpy as np

import dy2st

rng = np.random.default_rng(0)
W1 = rng.standard_normal((512, 512)).astype(np.float32)
W2 = rng.standard_normal((512, 512)).astype(np.float32)
b = rng.standard_normal(512).astype(np.float32)


@dy2st.to_static
def model(x, flag):
    if flag > 0:
        y = W1 @ x
    else:
        y = W2 @ x
    return np.maximum(y + b, 0)


def check(x, flag) -> None:
    result = model(x, flag)
    expected = model.fn(x, flag)  # the original, undecorated function
    assert result.shape == expected.shape and result.dtype == expected.dtype
    np.testing.assert_allclose(result, expected, rtol=1e-4, atol=1e-4)


def main() -> None:
    x = rng.standard_normal(512).astype(np.float32)
    print("=== transformed source")
    print(model.code)
    print("=== graph (after the passes)")
    print(model.graph(x, np.array(1)))
    for flag in (1, -1, 0):
        check(x, np.array(flag))
    assert model.num_graphs == 1, "every flag value runs through the same graph"
    assert [op.name for op in model.graph(x, np.array(1)).walk()].count("cond") == 1
    print("seed_flag_model: converted == eager NumPy for flag in (1, -1, 0); graphs built:", model.num_graphs)


if __name__ == "__main__":
    main()
