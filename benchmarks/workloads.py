"""The benchmark workloads of the design's performance section, as plain NumPy functions.

Each ``Workload`` names the eager function, the function to convert (usually the same one), and
builds its arguments. Module-level weights are set by ``Workload.setup`` so the converted functions
read them as graph captures, like the seed model does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

RNG = np.random.default_rng(0)


# --- W1: elementwise tanh-GELU chain, then scale and bias -------------------------------------------
def gelu_chain(x):
    inner = 0.7978845608 * (x + 0.044715 * x**3)
    y = 0.5 * x * (1.0 + np.tanh(inner))
    return y * 1.702 + 0.25


def gelu_chain_cubed(x):
    """The same chain written with ``x*x*x``, the fast way to write it for eager NumPy."""
    inner = 0.7978845608 * (x + 0.044715 * (x * x * x))
    y = 0.5 * x * (1.0 + np.tanh(inner))
    return y * 1.702 + 0.25


# --- W2: the seed model: a tensor flag picks one of two matmuls ------------------------------------
SEED_W1 = SEED_W2 = SEED_B = None


def seed_model(x, flag):
    if flag > 0:
        y = SEED_W1 @ x
    else:
        y = SEED_W2 @ x
    return np.maximum(y + SEED_B, 0)


def seed_model_again(x, flag):
    """The seed model under another name: W4 times its first call in a process that is warm."""
    if flag > 0:
        y = SEED_W1 @ x
    else:
        y = SEED_W2 @ x
    return np.maximum(y + SEED_B, 0)


# --- W5: 4-layer MLP forward --------------------------------------------------------------------------
MLP_W1 = MLP_W2 = MLP_W3 = MLP_W4 = MLP_B1 = MLP_B2 = MLP_B3 = MLP_B4 = None


def mlp(x):
    h = np.maximum(x @ MLP_W1 + MLP_B1, 0)
    h = np.maximum(h @ MLP_W2 + MLP_B2, 0)
    h = np.maximum(h @ MLP_W3 + MLP_B3, 0)
    return h @ MLP_W4 + MLP_B4


# --- W3: small-tensor loops ---------------------------------------------------------------------------
RNN_WX = RNN_WH = RNN_B = None


def rnn(xs, h, n):
    for i in range(n):
        h = np.tanh(xs[i] @ RNN_WX + h @ RNN_WH + RNN_B)
    return h


def newton_sqrt(a):
    x = a / 2.0
    while np.abs(x * x - a) > 1e-12 * a:
        x = 0.5 * (x + a / x)
    return x


# --- softmax and layernorm ----------------------------------------------------------------------------
def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def layernorm(x, gamma, beta):
    mu = np.mean(x, axis=-1, keepdims=True)
    d = x - mu
    var = np.mean(d * d, axis=-1, keepdims=True)
    return d / np.sqrt(var + 1e-5) * gamma + beta


# --- the table ------------------------------------------------------------------------------------------
@dataclass
class Workload:
    """One row of the benchmark table.

    Attributes:
        name: the row label.
        converted: the function given to ``to_static``.
        eager: the eager NumPy function it is compared with.
        make_args: ``make_args(quick)`` returns the argument tuple.
        setup: ``setup(quick)`` sets module-level weights before the functions run.
        target: the design's target for this row, as text.
    """

    name: str
    converted: Callable
    make_args: Callable[[bool], tuple]
    eager: Callable | None = None
    setup: Callable[[bool], None] = field(default=lambda quick: None)
    target: str = ""

    def __post_init__(self):
        if self.eager is None:
            self.eager = self.converted


def _vector(n: int) -> tuple:
    return (RNG.standard_normal(n, dtype=np.float32),)


def _setup_seed(quick: bool) -> None:
    global SEED_W1, SEED_W2, SEED_B
    n = 128 if quick else 512
    SEED_W1 = RNG.standard_normal((n, n), dtype=np.float32)
    SEED_W2 = RNG.standard_normal((n, n), dtype=np.float32)
    SEED_B = RNG.standard_normal(n, dtype=np.float32)


def _seed_args(quick: bool) -> tuple:
    n = 128 if quick else 512
    return RNG.standard_normal((n, n), dtype=np.float32), np.array(1)


def _setup_mlp(quick: bool) -> None:
    width = 128 if quick else 1024
    scale = np.float32(1.0 / np.sqrt(width))
    for i in range(1, 5):
        globals()[f"MLP_W{i}"] = RNG.standard_normal((width, width), dtype=np.float32) * scale
        globals()[f"MLP_B{i}"] = RNG.standard_normal(width, dtype=np.float32)


def _mlp_args(quick: bool) -> tuple:
    batch, width = (256, 128) if quick else (4096, 1024)
    return (RNG.standard_normal((batch, width), dtype=np.float32),)


def _setup_rnn(quick: bool) -> None:
    global RNN_WX, RNN_WH, RNN_B
    RNN_WX = RNG.standard_normal((32, 32)) * 0.2
    RNN_WH = RNG.standard_normal((32, 32)) * 0.2
    RNN_B = RNG.standard_normal(32) * 0.1


def _rnn_args(quick: bool) -> tuple:
    steps = 20 if quick else 200
    return RNG.standard_normal((steps, 32)), np.zeros(32), np.array(steps)


def _rows(quick: bool) -> tuple:
    rows, cols = (256, 1024) if quick else (4096, 1024)
    x = RNG.standard_normal((rows, cols), dtype=np.float32)
    return x


WORKLOADS = [
    Workload("W1 gelu x**3 4M f32", gelu_chain, lambda q: _vector(1 << 18 if q else 1 << 22), target="<= 0.012x eager"),
    Workload("W1 gelu x**3 64K f32", gelu_chain, lambda q: _vector(1 << 16)),
    Workload("W1 64K vs eager x*x*x", gelu_chain, lambda q: _vector(1 << 16), eager=gelu_chain_cubed, target="<= 0.7x"),
    Workload("W2 seed model 512", seed_model, _seed_args, setup=_setup_seed, target="<= 0.9x"),
    Workload("W5 MLP 4x1024 b4096", mlp, _mlp_args, setup=_setup_mlp, target="peak <= 1.05x bound"),
    Workload("W3 RNN 200 steps h32", rnn, _rnn_args, setup=_setup_rnn, target="<= 1.0x"),
    Workload("W3 Newton sqrt 0-d", newton_sqrt, lambda q: (np.array(1000.0),), target="<= 1.2x"),
    Workload("softmax 4096x1024", softmax, lambda q: (_rows(q),)),
    Workload(
        "layernorm 4096x1024",
        layernorm,
        lambda q: (_rows(q), RNG.standard_normal(1024, dtype=np.float32), RNG.standard_normal(1024, dtype=np.float32)),
    ),
]
