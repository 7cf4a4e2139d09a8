"""Fitting the parameters of an iterative solver with gradients through its `while` loop.

The model is an implicit layer: its output is the fixed point of ``z = tanh(W z + U x + b)``,
found by iterating until the update is smaller than a tolerance. How many iterations that takes
depends on the parameters and the input, so the loop is a ``while_loop`` in the graph, and
``dy2st.value_and_grad`` differentiates through it: the forward loop records what each
iteration's adjoint needs, and a backward loop replays the iterations in reverse. JAX's reverse
mode cannot do this (``jax.grad`` of a ``lax.while_loop`` raises).

The script checks the gradient against central finite differences, then fits ``W``, ``U`` and
``b`` by gradient descent so that the fixed points match targets. It exits non-zero if a check
fails.
"""

import numpy as np

import dy2st


def fixed_point(W, U, b, x, tol):
    """Iterate z = tanh(W z + U x + b) from zero until the update is below ``tol``."""
    z = np.zeros(W.shape[0])
    step = tol + 1.0
    while step > tol:
        new = np.tanh(W @ z + U @ x + b)
        step = np.abs(new - z).max()
        z = new
    return z


def loss(W, U, b, xs, targets):
    total = 0.0
    for k in range(xs.shape[0]):
        z = fixed_point(W, U, b, xs[k], 1e-10)
        total = total + ((z - targets[k]) ** 2).sum()
    return total / xs.shape[0]


def numerical_gradient(f, args, k, eps=1e-6):
    x = args[k]
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        shifted = [a.copy() for a in args]
        shifted[k][index] += eps
        plus = f(*shifted)
        shifted[k][index] -= 2 * eps
        minus = f(*shifted)
        grad[index] = (plus - minus) / (2 * eps)
    return grad


def main() -> None:
    rng = np.random.default_rng(0)
    n, m, samples = 4, 3, 6
    W = rng.normal(size=(n, n)) * 0.2  # small enough that the iteration contracts
    U = rng.normal(size=(n, m))
    b = rng.normal(size=n) * 0.1
    xs = rng.normal(size=(samples, m))
    targets = np.tanh(rng.normal(size=(samples, n)) * 0.5)

    value_and_grad = dy2st.value_and_grad(loss, argnums=(0, 1, 2))
    value, (gW, gU, gb) = value_and_grad(W, U, b, xs, targets)
    assert np.isclose(value, loss(W, U, b, xs, targets), rtol=1e-12), "value differs from eager NumPy"
    for k, got in enumerate((gW, gU, gb)):
        want = numerical_gradient(loss, [W, U, b, xs, targets], k)
        assert np.allclose(got, want, rtol=1e-5, atol=1e-7), f"gradient {k} differs from finite differences"
    print("gradients through the while loop match central finite differences")

    learning_rate = 0.5
    first = value
    for epoch in range(200):
        value, (gW, gU, gb) = value_and_grad(W, U, b, xs, targets)
        W, U, b = W - learning_rate * gW, U - learning_rate * gU, b - learning_rate * gb
        if epoch % 50 == 0:
            print(f"epoch {epoch:3d}: loss {value:.6f}")
    print(f"loss {first:.6f} -> {value:.6f} after 200 steps; gradient graphs built: {value_and_grad.num_graphs}")
    assert value < 0.5 * first, "the fit did not reduce the loss"
    assert value_and_grad.num_graphs == 1


if __name__ == "__main__":
    main()
