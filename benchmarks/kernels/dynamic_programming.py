"""Dynamic programming: all-pairs shortest paths (floyd_warshall), RNA folding (nussinov, element
by element), the 0/1 knapsack (one row update per item, slices bounded by the item's weight) and
the Viterbi decoding of a hidden Markov model with its backtrack."""

from __future__ import annotations

from typing import Any

import numpy as np

from .kernel import Kernel


def floyd_warshall(path):
    n = path.shape[0]
    for k in range(n):
        path[:] = np.minimum(path, np.add.outer(path[:, k], path[k, :]))
    return path


def _pairs(base1, base2):
    return 1 if base1 + base2 == 3 else 0


def nussinov(seq, table):
    n = seq.shape[0]
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            if j - 1 >= 0:
                table[i, j] = max(table[i, j], table[i, j - 1])
            if i + 1 < n:
                table[i, j] = max(table[i, j], table[i + 1, j])
            if j - 1 >= 0 and i + 1 < n:
                if i < j - 1:
                    table[i, j] = max(table[i, j], table[i + 1, j - 1] + _pairs(seq[i], seq[j]))
                else:
                    table[i, j] = max(table[i, j], table[i + 1, j - 1])
            for k in range(i + 1, j):
                table[i, j] = max(table[i, j], table[i, k] + table[k + 1, j])
    return table


def knapsack(weights, values, capacity):
    best = np.zeros(capacity + 1, dtype=values.dtype)
    for i in range(weights.shape[0]):
        w = weights[i]
        best[w:] = np.maximum(best[w:], best[: capacity + 1 - w] + values[i])
    return best


def viterbi(log_start, log_transition, log_emission, observations):
    n_steps = observations.shape[0]
    n_states = log_start.shape[0]
    delta = np.zeros((n_steps, n_states))
    backpointer = np.zeros((n_steps, n_states), dtype=np.int64)
    delta[0] = log_start + log_emission[:, observations[0]]
    for t in range(1, n_steps):
        scores = delta[t - 1][:, None] + log_transition
        backpointer[t] = np.argmax(scores, axis=0)
        delta[t] = np.max(scores, axis=0) + log_emission[:, observations[t]]
    states = np.zeros(n_steps, dtype=np.int64)
    states[-1] = np.argmax(delta[-1])
    for t in range(n_steps - 2, -1, -1):
        states[t] = backpointer[t + 1, states[t + 1]]
    return states, delta[-1].max()


def _floyd_warshall_args(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    weights = rng.integers(1, 100, (n, n)).astype(np.float64)
    weights[rng.random((n, n)) < 0.3] = np.inf
    np.fill_diagonal(weights, 0.0)
    return (weights,)


def _nussinov_args(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return rng.integers(0, 4, n).astype(np.int32), np.zeros((n, n), dtype=np.int32)


def _knapsack_args(rng: np.random.Generator, items: int, capacity: int) -> tuple[Any, ...]:
    return rng.integers(1, capacity // 4 + 2, items), rng.integers(1, 100, items), capacity


def _viterbi_args(rng: np.random.Generator, states: int, symbols: int, steps: int) -> tuple[Any, ...]:
    def log_stochastic(shape: tuple[int, ...]) -> np.ndarray:
        p = rng.random(shape) + 0.1
        return np.log(p / p.sum(axis=-1, keepdims=True))

    return (
        log_stochastic((states,)),
        log_stochastic((states, states)),
        log_stochastic((states, symbols)),
        rng.integers(0, symbols, steps),
    )


KERNELS = [
    Kernel(
        "floyd_warshall",
        "dynamic_programming",
        floyd_warshall,
        _floyd_warshall_args,
        {"test": dict(n=8), "resized": dict(n=11), "small": dict(n=200)},
    ),
    Kernel(
        "nussinov",
        "dynamic_programming",
        nussinov,
        _nussinov_args,
        {"test": dict(n=8), "resized": dict(n=11), "small": dict(n=30)},
    ),
    Kernel(
        "knapsack",
        "dynamic_programming",
        knapsack,
        _knapsack_args,
        {
            "test": dict(items=8, capacity=20),
            "resized": dict(items=11, capacity=30),
            "small": dict(items=300, capacity=2000),
        },
    ),
    Kernel(
        "viterbi",
        "dynamic_programming",
        viterbi,
        _viterbi_args,
        {
            "test": dict(states=4, symbols=5, steps=10),
            "resized": dict(states=6, symbols=3, steps=13),
            "small": dict(states=20, symbols=30, steps=300),
        },
    ),
]
