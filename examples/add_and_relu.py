"""The smallest dy2st program: ``relu(x + y)`` as a static graph, checked against eager NumPy.

Run it as a script (``python examples/add_and_relu.py``); it exits non-zero if the converted
function disagrees with NumPy.
"""

import numpy as np

import dy2st


def add_and_relu(x, y):
    """``max(x + y, 0)`` elementwise, with NumPy broadcasting."""
    return np.maximum(x + y, 0)


static_add_and_relu = dy2st.to_static(add_and_relu)


def main() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    y = rng.standard_normal(4).astype(np.float32)  # broadcasts over the rows of x

    result = static_add_and_relu(x, y)
    expected = add_and_relu(x, y)
    assert result.shape == expected.shape and result.dtype == expected.dtype, (result, expected)
    np.testing.assert_array_equal(result, expected)

    print(static_add_and_relu.graph(x, y))
    print("add_and_relu: converted result equals eager NumPy", result.dtype, result.shape)


if __name__ == "__main__":
    main()
