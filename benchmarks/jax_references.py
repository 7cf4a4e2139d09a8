"""jax.jit versions of the benchmark workloads: a reference column of ``run.py``, never a dependency.

Each is the workload written the way a JAX user writes it (``lax.scan`` for the RNN's loop,
``lax.while_loop`` for Newton's), with the same weights and dtypes (``jax_enable_x64``: float64
stays float64). ``reference(name)`` returns ``make(args) -> call`` or None: ``make`` moves the
arguments to JAX once, and ``call()`` runs the jitted function and waits for its result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import workloads

try:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
except ImportError:  # the column is left empty
    jax = None


def _gelu(x):
    inner = 0.7978845608 * (x + 0.044715 * x**3)
    y = 0.5 * x * (1.0 + jnp.tanh(inner))
    return y * 1.702 + 0.25


def _seed_model():
    w1, w2, b = (jnp.asarray(w) for w in (workloads.SEED_W1, workloads.SEED_W2, workloads.SEED_B))

    def seed(x, flag):
        y = jax.lax.cond(flag > 0, lambda: w1 @ x, lambda: w2 @ x)
        return jnp.maximum(y + b, 0)

    return seed


def _mlp():
    weights = [jnp.asarray(getattr(workloads, f"MLP_{kind}{k}")) for k in range(1, 5) for kind in ("W", "B")]

    def mlp(x):
        h = x
        for k in range(3):
            h = jnp.maximum(h @ weights[2 * k] + weights[2 * k + 1], 0)
        return h @ weights[6] + weights[7]

    return mlp


def _rnn():
    wx, wh, b = (jnp.asarray(w) for w in (workloads.RNN_WX, workloads.RNN_WH, workloads.RNN_B))

    def rnn(xs, h, n):
        def step(h, x):
            return jnp.tanh(x @ wx + h @ wh + b), None

        return jax.lax.scan(step, h, xs)[0]  # n is len(xs) in the workload

    return rnn


def _newton(a):
    def body(x):
        return 0.5 * (x + a / x)

    return jax.lax.while_loop(lambda x: jnp.abs(x * x - a) > 1e-12 * a, body, a / 2.0)


def _softmax(x):
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    return e / jnp.sum(e, axis=-1, keepdims=True)


def _layernorm(x, gamma, beta):
    mu = jnp.mean(x, axis=-1, keepdims=True)
    d = x - mu
    var = jnp.mean(d * d, axis=-1, keepdims=True)
    return d / jnp.sqrt(var + 1e-5) * gamma + beta


# Workload name prefix -> a function building the JAX function (after the workload's setup).
_BUILDERS: dict[str, Callable[[], Callable[..., Any]]] = {
    "W1": lambda: _gelu,
    "W2": _seed_model,
    "W5": _mlp,
    "W3 RNN": _rnn,
    "W3 Newton": lambda: _newton,
    "softmax": lambda: _softmax,
    "layernorm": lambda: _layernorm,
}


def reference(name: str) -> Callable[[tuple], Callable[[], Any]] | None:
    """``make(args) -> call`` for the workload ``name``, or None (no JAX, or no JAX version)."""
    if jax is None:
        return None
    build = next((b for prefix, b in _BUILDERS.items() if name.startswith(prefix)), None)
    if build is None:
        return None

    def make(args: tuple) -> Callable[[], Any]:
        jitted = jax.jit(build())
        device_args = [jnp.asarray(a) for a in args]

        def call() -> Any:
            return jax.block_until_ready(jitted(*device_args))

        return call

    return make
