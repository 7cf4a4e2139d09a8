"""Newton's method for the square root of a 0-d array, iterating until a tolerance is met.

The loop condition depends on the tensor ``x``, so it becomes a ``while_loop`` op: the graph runs
as many iterations as each input needs.

Run it as a script; it exits non-zero if the converted function disagrees with eager NumPy.
"""

import numpy as np

import dy2st


@dy2st.to_static
def newton_sqrt(a, tol):
    x = a / 2 + 0.5
    steps = 0
    while np.abs(x * x - a) > tol * a:
        x = 0.5 * (x + a / x)
        steps += 1
    return x, steps


def main() -> None:
    print("=== transformed source")
    print(newton_sqrt.code)
    print("=== graph (after the passes)")
    print(newton_sqrt.graph(np.array(2.0), 1e-12))
    for a in (2.0, 1e6, 0.25, 1.0):
        got, got_steps = newton_sqrt(np.array(a), 1e-12)
        want, want_steps = newton_sqrt.fn(np.array(a), 1e-12)
        assert np.asarray(got).dtype == np.asarray(want).dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=1e-15)
        assert int(got_steps) == int(want_steps)
        print(f"sqrt({a:g}) = {float(got):.15g} in {int(got_steps)} steps, same as eager")
    assert newton_sqrt.num_graphs == 1
    print("newton_sqrt: converted == eager NumPy; graphs built:", newton_sqrt.num_graphs)


if __name__ == "__main__":
    main()
