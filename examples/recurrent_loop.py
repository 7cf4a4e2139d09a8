"""A recurrent loop: ``h = tanh(W @ h + x)`` repeated until the state settles or a step limit.

The loop condition mixes a tensor (the change in ``h``) with a Python-int counter, so the loop is
a ``while_loop`` op carrying ``h``, ``delta`` and the counter ``step``; the counter stays a Python
int inside the loop (weakly typed), exactly as in eager NumPy.

Run it as a script; it exits non-zero if the converted loop disagrees with eager NumPy.
"""

import numpy as np

import dy2st

rng = np.random.default_rng(1)
W = (rng.standard_normal((16, 16)) * 0.2).astype(np.float32)


@dy2st.to_static
def settle(x, tol, max_steps):
    h = np.zeros_like(x)
    delta = tol + 1
    step = 0
    while delta > tol and step < max_steps:
        new_h = np.tanh(W @ h + x)
        delta = np.abs(new_h - h).max()
        h = new_h
        step += 1
    return h, step


def main() -> None:
    x = rng.standard_normal(16).astype(np.float32)
    print("=== transformed source")
    print(settle.code)
    print("=== graph (after the passes)")
    print(settle.graph(x, np.float32(1e-4), np.array(100)))
    for tol, max_steps in ((1e-4, 100), (1e-2, 100), (1e-6, 3)):
        got_h, got_steps = settle(x, np.float32(tol), np.array(max_steps))
        want_h, want_steps = settle.fn(x, np.float32(tol), np.array(max_steps))
        assert got_h.dtype == want_h.dtype == np.float32
        np.testing.assert_allclose(got_h, want_h, rtol=1e-5, atol=1e-6)
        assert int(got_steps) == int(want_steps)
        print(f"tol={tol:g}, max_steps={max_steps}: {int(got_steps)} steps, same as eager")
    assert settle.num_graphs == 1
    print("recurrent_loop: converted == eager NumPy; graphs built:", settle.num_graphs)


if __name__ == "__main__":
    main()
