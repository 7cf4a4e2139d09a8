"""Gradient benchmark (issue 14): ``value_and_grad`` of the W5 MLP and the W3 RNN against their
forward pass, with jax.value_and_grad(jit) as a reference column where JAX is installed.

Prints, per workload: the converted forward time, the value_and_grad time and their ratio (target
at most 3x), the peak memory of each call (tracemalloc: NumPy's allocations) with the bytes the
gradient has to keep from the forward pass (the loop's saved iterations, the layers' activations),
and the JAX times; the last peak ratio also counts the gradients the call returns, which the
forward pass does not make (for the RNN they are a quarter of what the backward pass keeps).
Medians of interleaved repeats, one process. dy2st runs on the compiled tier
(``backend="compiled"``) where Numba is installed, else on the NumPy tier.

    python benchmarks/gradients.py            # the full sizes (MLP 4x1024, batch 4096; RNN T=200)
    python benchmarks/gradients.py --quick    # small sizes, a few seconds
"""

from __future__ import annotations

import argparse
import importlib.util
import sys

import numpy as np
from run import interleaved_medians, traced_peak

import dy2st
from dy2st.backend.numpy.target import NUMPY_TARGET
from dy2st.passes.memory_plan import memory_report

RNG = np.random.default_rng(0)
BACKEND = "compiled" if importlib.util.find_spec("numba") else "numpy"


def mlp_loss(w1, b1, w2, b2, w3, b3, w4, b4, x):
    h = np.maximum(x @ w1 + b1, 0)
    h = np.maximum(h @ w2 + b2, 0)
    h = np.maximum(h @ w3 + b3, 0)
    y = h @ w4 + b4
    return (y * y).mean()


def rnn_loss(wx, wh, b, xs, h):
    for i in range(xs.shape[0]):
        h = np.tanh(xs[i] @ wx + h @ wh + b)
    return (h * h).sum()


def _mlp_args(quick: bool) -> tuple:
    batch, width = (256, 128) if quick else (4096, 1024)
    scale = np.float32(1.0 / np.sqrt(width))
    layers = []
    for _ in range(4):
        layers += [
            RNG.standard_normal((width, width), dtype=np.float32) * scale,
            RNG.standard_normal(width, dtype=np.float32),
        ]
    return (*layers, RNG.standard_normal((batch, width), dtype=np.float32))


def _rnn_args(quick: bool) -> tuple:
    steps = 20 if quick else 200
    return (
        RNG.standard_normal((32, 32)) * 0.2,
        RNG.standard_normal((32, 32)) * 0.2,
        RNG.standard_normal(32) * 0.1,
        RNG.standard_normal((steps, 32)),
        np.zeros(32),
    )


def _saved_bytes(name: str, args: tuple) -> int:
    """What the backward pass keeps from the forward one: the MLP's three hidden activations and,
    per ReLU, the two boolean masks its adjoint reads (``z > 0`` and ``z == 0``, a quarter of an
    activation each; the tie mask cannot be recomputed from the activation, which is 0 for every
    ``z <= 0``); the RNN's hidden state at every step."""
    if name.startswith("MLP"):
        activation = args[-1].shape[0] * args[0].shape[1]
        return 3 * activation * args[0].itemsize + 3 * 2 * activation
    return args[3].shape[0] * args[4].nbytes


def _jax_column(fn_name: str, args: tuple, argnums: tuple[int, ...], repeats: int, min_seconds: float) -> float | None:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)

    def jax_mlp(w1, b1, w2, b2, w3, b3, w4, b4, x):
        h = jnp.maximum(x @ w1 + b1, 0)
        h = jnp.maximum(h @ w2 + b2, 0)
        h = jnp.maximum(h @ w3 + b3, 0)
        y = h @ w4 + b4
        return (y * y).mean()

    def jax_rnn(wx, wh, b, xs, h):
        def step(h, x):
            return jnp.tanh(x @ wx + h @ wh + b), None

        h, _ = jax.lax.scan(step, h, xs)
        return (h * h).sum()

    fn = jax.jit(jax.value_and_grad(jax_mlp if fn_name == "mlp" else jax_rnn, argnums=argnums))
    device_args = [jnp.asarray(a) for a in args]

    def call(*a):
        return jax.block_until_ready(fn(*a))

    return interleaved_medians([call], device_args, repeats, min_seconds)[0]


def measure(name: str, loss, args: tuple, argnums: tuple[int, ...], quick: bool) -> list[str]:
    repeats, min_seconds = (3, 0.05) if quick else (7, 0.2)
    # The steady state: with Numba installed, the compiled tier's code from the first call on
    # (the default backend swaps it in when a background compile ends, which a loaded machine
    # may not reach within the warm-up).
    forward = dy2st.to_static(loss, backend=BACKEND)
    both = dy2st.value_and_grad(forward, argnums=argnums)
    value, grads = both(*args)
    assert np.allclose(value, loss(*args), rtol=1e-4)
    eager_time, forward_time, grad_time = interleaved_medians([loss, forward, both], args, repeats, min_seconds)
    # As in run.py: what one call allocates, plus the buffers the memory plan keeps across calls.
    forward_peak = traced_peak(forward, args) + memory_report(forward.graph(*args), NUMPY_TARGET).persistent
    grad_peak = traced_peak(both, args) + memory_report(both.graph(*args), NUMPY_TARGET).persistent
    saved = _saved_bytes(name, args)
    returned = sum(np.asarray(g).nbytes for g in grads)  # the gradients the call hands back
    jax_time = _jax_column("mlp" if name.startswith("MLP") else "rnn", args, argnums, repeats, min_seconds)
    mib = 1 << 20
    return [
        name,
        f"{eager_time * 1e3:.3f}",
        f"{forward_time * 1e3:.3f}",
        f"{grad_time * 1e3:.3f}",
        f"{grad_time / forward_time:.2f}x",
        f"{forward_peak / mib:.1f}",
        f"{grad_peak / mib:.1f}",
        f"{saved / mib:.1f}",
        f"{grad_peak / max(forward_peak + saved, 1):.2f}x",
        f"{grad_peak / max(forward_peak + saved + returned, 1):.2f}x",
        "-" if jax_time is None else f"{jax_time * 1e3:.3f}",
        "-" if jax_time is None else f"{grad_time / jax_time:.2f}x",
    ]


HEADER = [
    "workload",
    "eager fwd ms",
    "dy2st fwd ms",
    "value_and_grad ms",
    "grad/fwd",
    "fwd peak MiB",
    "grad peak MiB",
    "saved MiB",
    "peak/(fwd+saved)",
    "peak/(fwd+saved+grads)",
    "jax v&g ms",
    "dy2st/jax",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes and few repeats")
    options = parser.parse_args(argv)
    rows = [
        measure("MLP 4 layers", mlp_loss, _mlp_args(options.quick), tuple(range(8)), options.quick),
        measure("RNN T steps h32", rnn_loss, _rnn_args(options.quick), (0, 1, 2), options.quick),
    ]
    widths = [max(len(h), *(len(r[k]) for r in rows)) for k, h in enumerate(HEADER)]
    for line in [HEADER, *rows]:
        print("  ".join(cell.rjust(w) for cell, w in zip(line, widths)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
