"""Hand-written ``@numba.njit`` versions of the benchmark workloads: a reference column of ``run.py``.

What a user rewriting each workload for Numba writes: explicit loops over elements and rows,
``np.dot`` for the products, the weights passed as arguments (Numba freezes globals at compile
time). ``reference(name)`` returns ``make(args) -> call`` or None (no Numba, or no version).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import workloads

try:
    import numba
except ImportError:  # the column is left empty
    numba = None


def gelu(x):
    out = np.empty_like(x)
    for i in range(x.size):
        v = x[i]
        inner = 0.7978845608 * (v + 0.044715 * v * v * v)
        out[i] = (0.5 * v * (1.0 + math.tanh(inner))) * 1.702 + 0.25
    return out


def seed(x, flag, w1, w2, b):
    y = np.dot(w1, x) if flag[()] > 0 else np.dot(w2, x)
    out = np.empty_like(y)
    for i in range(y.shape[0]):
        for j in range(y.shape[1]):
            out[i, j] = max(y[i, j] + b[j], np.float32(0.0))
    return out


def mlp(x, w1, b1, w2, b2, w3, b3, w4, b4):
    h = x
    for w, b in ((w1, b1), (w2, b2), (w3, b3)):
        h = np.dot(h, w)
        for i in range(h.shape[0]):
            for j in range(h.shape[1]):
                h[i, j] = max(h[i, j] + b[j], np.float32(0.0))
    out = np.dot(h, w4)
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] += b4[j]
    return out


def rnn(xs, h, n, wx, wh, b):
    for t in range(n[()]):
        a = np.dot(xs[t], wx) + np.dot(h, wh)
        h = np.empty_like(a)
        for j in range(a.shape[0]):
            h[j] = math.tanh(a[j] + b[j])
    return h


def newton(a):
    value = a[()]
    x = value / 2.0
    while abs(x * x - value) > 1e-12 * value:
        x = 0.5 * (x + value / x)
    return x


def softmax(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        top = x[i, 0]
        for j in range(x.shape[1]):
            top = max(top, x[i, j])
        total = 0.0
        for j in range(x.shape[1]):
            out[i, j] = math.exp(x[i, j] - top)
            total += out[i, j]
        for j in range(x.shape[1]):
            out[i, j] /= total
    return out


def layernorm(x, gamma, beta):
    out = np.empty_like(x)
    n = x.shape[1]
    for i in range(x.shape[0]):
        mu = 0.0
        for j in range(n):
            mu += x[i, j]
        mu /= n
        var = 0.0
        for j in range(n):
            var += (x[i, j] - mu) ** 2
        var /= n
        scale = 1.0 / math.sqrt(var + 1e-5)
        for j in range(n):
            out[i, j] = (x[i, j] - mu) * scale * gamma[j] + beta[j]
    return out


# The kernels above, by name: compiled with ``numba.njit`` on first use.
_PLAIN: dict[str, Callable[..., Any]] = {
    "gelu": gelu,
    "seed": seed,
    "mlp": mlp,
    "rnn": rnn,
    "newton": newton,
    "softmax": softmax,
    "layernorm": layernorm,
}


def _weights(name: str) -> tuple:
    """The module-level weights a workload reads, as arguments (after its setup ran)."""
    w = workloads
    return {
        "seed": lambda: (w.SEED_W1, w.SEED_W2, w.SEED_B),
        "mlp": lambda: (w.MLP_W1, w.MLP_B1, w.MLP_W2, w.MLP_B2, w.MLP_W3, w.MLP_B3, w.MLP_W4, w.MLP_B4),
        "rnn": lambda: (w.RNN_WX, w.RNN_WH, w.RNN_B),
    }.get(name, lambda: ())()


# Workload name prefix -> the kernel's name.
_KERNELS = {
    "W1": "gelu",
    "W2": "seed",
    "W5": "mlp",
    "W3 RNN": "rnn",
    "W3 Newton": "newton",
    "softmax": "softmax",
    "layernorm": "layernorm",
}
_COMPILED: dict[str, Callable[..., Any]] = {}


def reference(name: str) -> Callable[[tuple], Callable[[], Any]] | None:
    """``make(args) -> call`` for the workload ``name``, or None."""
    if numba is None:
        return None
    kernel = next((k for prefix, k in _KERNELS.items() if name.startswith(prefix)), None)
    if kernel is None:
        return None
    if not _COMPILED:
        _COMPILED.update({k: numba.njit(function) for k, function in _PLAIN.items()})

    def make(args: tuple) -> Callable[[], Any]:
        function, full = _COMPILED[kernel], (*args, *_weights(kernel))
        return lambda: function(*full)

    return make
