"""Factorizations and solvers of PolyBench's "solvers" group (gramschmidt, lu, ludcmp, cholesky,
trisolv, durbin), with loops over rows and columns and slices bounded by the loop counters."""

from __future__ import annotations

from typing import Any

import numpy as np

from .kernel import Kernel


def gramschmidt(A):
    m, n = A.shape
    Q = np.zeros((m, n), dtype=A.dtype)
    R = np.zeros((n, n), dtype=A.dtype)
    for k in range(n):
        R[k, k] = np.sqrt(A[:, k] @ A[:, k])
        Q[:, k] = A[:, k] / R[k, k]
        for j in range(k + 1, n):
            R[k, j] = Q[:, k] @ A[:, j]
            A[:, j] -= Q[:, k] * R[k, j]
    return Q, R


def lu(A):
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[:j, j]
            A[i, j] /= A[j, j]
        for j in range(i, n):
            A[i, j] -= A[i, :i] @ A[:i, j]
    return A


def ludcmp(A, b):
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] = (A[i, j] - A[i, :j] @ A[:j, j]) / A[j, j]
        A[i, i:] -= A[i, :i] @ A[:i, i:]
    y = np.zeros_like(b)
    for i in range(n):
        y[i] = b[i] - A[i, :i] @ y[:i]
    x = np.zeros_like(b)
    for i in range(n - 1, -1, -1):
        x[i] = (y[i] - A[i, i + 1 :] @ x[i + 1 :]) / A[i, i]
    return x, y


def cholesky(A):
    n = A.shape[0]
    A[0, 0] = np.sqrt(A[0, 0])
    for i in range(1, n):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[j, :j]
            A[i, j] /= A[j, j]
        A[i, i] -= A[i, :i] @ A[i, :i]
        A[i, i] = np.sqrt(A[i, i])
    return A


def trisolv(L, x, b):
    n = x.shape[0]
    for i in range(n):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


def durbin(r):
    n = r.shape[0]
    y = np.empty_like(r)
    alpha = -r[0]
    beta = 1.0
    y[0] = -r[0]
    for k in range(1, n):
        beta *= 1.0 - alpha * alpha
        alpha = -(r[k] + r[:k][::-1] @ y[:k]) / beta
        y[:k] += alpha * y[:k][::-1]
        y[k] = alpha
    return y


def _tall_args(rng: np.random.Generator, m: int, n: int) -> tuple[Any, ...]:
    return (rng.random((m, n)) + np.eye(m, n),)


def _diagonally_dominant(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.random((n, n)) + n * np.eye(n)


def _lu_args(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return (_diagonally_dominant(rng, n),)


def _ludcmp_args(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return _diagonally_dominant(rng, n), rng.random(n)


def _cholesky_args(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    M = rng.random((n, n))
    return (M @ M.T + n * np.eye(n),)


def _trisolv_args(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return np.tril(rng.random((n, n))) + n * np.eye(n), np.zeros(n), rng.random(n)


def _durbin_args(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    correlation = rng.uniform(0.2, 0.6)
    return (correlation ** np.arange(1, n + 1) * rng.uniform(0.95, 1.0, n),)


def _square(test: int, resized: int, small: int) -> dict[str, dict[str, int]]:
    return {"test": dict(n=test), "resized": dict(n=resized), "small": dict(n=small)}


KERNELS = [
    Kernel(
        "gramschmidt",
        "solvers",
        gramschmidt,
        _tall_args,
        {"test": dict(m=9, n=7), "resized": dict(m=12, n=8), "small": dict(m=70, n=50)},
    ),
    Kernel("lu", "solvers", lu, _lu_args, _square(8, 11, 60)),
    Kernel("ludcmp", "solvers", ludcmp, _ludcmp_args, _square(8, 11, 60)),
    Kernel("cholesky", "solvers", cholesky, _cholesky_args, _square(8, 11, 60)),
    Kernel("trisolv", "solvers", trisolv, _trisolv_args, _square(8, 11, 800)),
    Kernel("durbin", "solvers", durbin, _durbin_args, _square(8, 11, 400)),
]
