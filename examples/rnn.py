"""An RNN over time steps with a tensor sequence length: ``for t in range(length)`` is a while_loop.

``length`` is a 0-d int array, so the number of steps is only known when the graph runs: the loop
becomes one ``while_loop`` op carrying the hidden state, and one graph serves every length.

Run it as a script; it exits non-zero if the converted RNN disagrees with eager NumPy.
"""

import numpy as np

import dy2st

rng = np.random.default_rng(2)
HIDDEN, INPUT, STEPS = 32, 8, 200
W_x = (rng.standard_normal((INPUT, HIDDEN)) * 0.3).astype(np.float32)
W_h = (rng.standard_normal((HIDDEN, HIDDEN)) * 0.1).astype(np.float32)
b = np.zeros(HIDDEN, dtype=np.float32)


@dy2st.to_static
def rnn(xs, h, length):
    for t in range(length):
        h = np.tanh(xs[t] @ W_x + h @ W_h + b)
    return h


def main() -> None:
    xs = rng.standard_normal((STEPS, INPUT)).astype(np.float32)
    h0 = np.zeros(HIDDEN, dtype=np.float32)
    print("=== transformed source")
    print(rnn.code)
    print("=== graph (after the passes)")
    print(rnn.graph(xs, h0, np.array(STEPS)))
    for length in (STEPS, 17, 0):
        got = rnn(xs, h0, np.array(length))
        want = rnn.fn(xs, h0, np.array(length))
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert rnn.num_graphs == 1
    print("rnn: converted == eager NumPy for lengths 200, 17, 0; graphs built:", rnn.num_graphs)


if __name__ == "__main__":
    main()
