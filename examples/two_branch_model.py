"""The two-branch seed model: ``relu(X1 @ W1 + X2 @ W2)`` with module-level weights.

The weights are globals: dy2st makes them graph *captures*, read by reference at every call, so
updating them in place (as a training step would) changes the next result without a rebuild.

Run it as a script; it exits non-zero if the converted model disagrees with eager NumPy.
"""

import numpy as np

import dy2st

rng = np.random.default_rng(0)
W1 = rng.standard_normal((128, 64)).astype(np.float32)
W2 = rng.standard_normal((128, 64)).astype(np.float32)


@dy2st.to_static
def model(X1, X2):
    Y1 = X1 @ W1
    Y2 = X2 @ W2
    return np.maximum(Y1 + Y2, 0)


def check(X1, X2) -> np.ndarray:
    """Run the converted model and compare it with the same code run eagerly."""
    result = model(X1, X2)
    expected = model.fn(X1, X2)  # the original, undecorated function
    assert result.shape == expected.shape and result.dtype == expected.dtype
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-5)
    return result


def main() -> None:
    X1 = rng.standard_normal((32, 128)).astype(np.float32)
    X2 = rng.standard_normal((32, 128)).astype(np.float32)
    check(X1, X2)

    np.multiply(W1, 0.5, out=W1)  # an in-place update of a captured global: seen by the same graph
    check(X1, X2)
    assert model.num_graphs == 1

    print(model.graph(X1, X2))
    print("two_branch_model: converted result equals eager NumPy; graphs built:", model.num_graphs)


if __name__ == "__main__":
    main()
