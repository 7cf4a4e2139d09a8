"""Gradients of converted functions: dy2st.grad, value_and_grad and vjp, through an `if` and a
`while` loop whose trip count depends on the data.

Run it as a script; it exits non-zero if a gradient disagrees with central finite differences.
`dy2st dump examples/gradients.py::relax --grad 0 --arg x=f64[8]` prints the gradient graph.
"""

import numpy as np

import dy2st


def relax(x):
    """Smooth ``x`` by averaging neighbours until it changes by less than a tolerance, then
    return an energy of the result (a scalar)."""
    change = np.array(1.0)
    while change > 1e-8:
        smoothed = x.copy()
        smoothed[1:-1] = 0.25 * x[:-2] + 0.5 * x[1:-1] + 0.25 * x[2:]
        change = np.abs(smoothed - x).max()
        x = smoothed
    if x.sum() > 0:
        energy = (x**2).sum()
    else:
        energy = np.exp(x).sum()
    return energy


def central_differences(f, x, eps=1e-6):
    grad = np.zeros_like(x)
    for i in range(x.size):
        step = np.zeros_like(x)
        step[i] = eps
        grad[i] = (f(x + step) - f(x - step)) / (2 * eps)
    return grad


def main() -> None:
    x = np.sin(np.linspace(0.0, 3.0, 8)) + 0.2
    grad = dy2st.grad(relax)(x)
    want = central_differences(relax, x)
    print("dy2st.grad:          ", np.round(grad, 6))
    print("finite differences:  ", np.round(want, 6))
    assert np.allclose(grad, want, rtol=1e-5, atol=1e-8), "the gradient differs from finite differences"

    value, grad_again = dy2st.value_and_grad(relax)(x)
    assert value == relax(x) and np.array_equal(grad, grad_again)

    outputs, pullback = dy2st.vjp(lambda v: np.tanh(v) * 2.0, x)
    (cotangent,) = pullback(np.ones_like(x))
    assert np.allclose(cotangent, 2.0 * (1.0 - np.tanh(x) ** 2))
    print("grad, value_and_grad and vjp agree with NumPy")


if __name__ == "__main__":
    main()
