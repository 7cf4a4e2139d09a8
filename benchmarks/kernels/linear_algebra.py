"""Dense linear algebra kernels of the PolyBench "blas" and "kernels" groups (gemm, 2mm, 3mm, atax,
bicg, mvt, gesummv, gemver, syrk, syr2k, symm, trmm, doitgen), written as NumPy users write them:
whole-array products where NumPy has one, Python loops over rows where the algorithm walks a
triangle."""

from __future__ import annotations

from typing import Any

import numpy as np

from .kernel import Kernel

ALPHA = 1.5
BETA = 1.2


def gemm(alpha, beta, C, A, B):
    C *= beta
    C += alpha * A @ B
    return C


def k2mm(alpha, beta, A, B, C, D):
    D[:] = alpha * A @ B @ C + beta * D
    return D


def k3mm(A, B, C, D):
    return (A @ B) @ (C @ D)


def atax(A, x):
    return (A @ x) @ A


def bicg(A, p, r):
    return r @ A, A @ p


def mvt(x1, x2, y_1, y_2, A):
    x1 += A @ y_1
    x2 += y_2 @ A
    return x1, x2


def gesummv(alpha, beta, A, B, x):
    return alpha * A @ x + beta * B @ x


def gemver(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    A += np.outer(u1, v1) + np.outer(u2, v2)
    x += beta * y @ A + z
    w += alpha * A @ x
    return A, x, w


def syrk(alpha, beta, C, A):
    n, m = A.shape
    for i in range(n):
        C[i, : i + 1] *= beta
        for k in range(m):
            C[i, : i + 1] += alpha * A[i, k] * A[: i + 1, k]
    return C


def syr2k(alpha, beta, C, A, B):
    n, m = A.shape
    for i in range(n):
        C[i, : i + 1] *= beta
        for k in range(m):
            C[i, : i + 1] += A[: i + 1, k] * alpha * B[i, k] + B[: i + 1, k] * alpha * A[i, k]
    return C


def symm(alpha, beta, C, A, B):
    m = C.shape[0]
    for i in range(m):
        C[:i, :] += alpha * np.outer(A[i, :i], B[i, :])
        below = A[i, :i] @ B[:i, :]
        C[i, :] = beta * C[i, :] + alpha * A[i, i] * B[i, :] + alpha * below
    return C


def trmm(alpha, A, B):
    m, n = B.shape
    for i in range(m):
        for j in range(n):
            B[i, j] += A[i + 1 :, i] @ B[i + 1 :, j]
    B *= alpha
    return B


def doitgen(A, C4):
    nr, nq, _ = A.shape
    for r in range(nr):
        for q in range(nq):
            A[r, q, :] = A[r, q, :] @ C4
    return A


def _gemm_args(rng: np.random.Generator, ni: int, nj: int, nk: int) -> tuple[Any, ...]:
    return ALPHA, BETA, rng.random((ni, nj)), rng.random((ni, nk)), rng.random((nk, nj))


def _k2mm_args(rng: np.random.Generator, ni: int, nj: int, nk: int, nl: int) -> tuple[Any, ...]:
    shapes = [(ni, nk), (nk, nj), (nj, nl), (ni, nl)]
    return (ALPHA, BETA, *(rng.random(shape) for shape in shapes))


def _k3mm_args(rng: np.random.Generator, ni: int, nj: int, nk: int, nl: int, nm: int) -> tuple[Any, ...]:
    return tuple(rng.random(shape) for shape in [(ni, nk), (nk, nj), (nj, nm), (nm, nl)])


def _atax_args(rng: np.random.Generator, m: int, n: int) -> tuple[Any, ...]:
    return rng.random((m, n)), rng.random(n)


def _bicg_args(rng: np.random.Generator, m: int, n: int) -> tuple[Any, ...]:
    return rng.random((n, m)), rng.random(m), rng.random(n)


def _mvt_args(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    vectors = [rng.random(n, dtype=np.float32) for _ in range(4)]
    return (*vectors, rng.random((n, n), dtype=np.float32))


def _gesummv_args(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return ALPHA, BETA, rng.random((n, n)), rng.random((n, n)), rng.random(n)


def _gemver_args(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return (ALPHA, BETA, rng.random((n, n)), *(rng.random(n) for _ in range(8)))


def _syrk_args(rng: np.random.Generator, n: int, m: int) -> tuple[Any, ...]:
    return ALPHA, BETA, rng.random((n, n)), rng.random((n, m))


def _syr2k_args(rng: np.random.Generator, n: int, m: int) -> tuple[Any, ...]:
    return ALPHA, BETA, rng.random((n, n)), rng.random((n, m)), rng.random((n, m))


def _symm_args(rng: np.random.Generator, m: int, n: int) -> tuple[Any, ...]:
    return ALPHA, BETA, rng.random((m, n)), rng.random((m, m)), rng.random((m, n))


def _trmm_args(rng: np.random.Generator, m: int, n: int) -> tuple[Any, ...]:
    return ALPHA, np.tril(rng.random((m, m))), rng.random((m, n))


def _doitgen_args(rng: np.random.Generator, nr: int, nq: int, np_: int) -> tuple[Any, ...]:
    return rng.random((nr, nq, np_)), rng.random((np_, np_))


KERNELS = [
    Kernel(
        "gemm",
        "linear_algebra",
        gemm,
        _gemm_args,
        {
            "test": dict(ni=6, nj=7, nk=8),
            "resized": dict(ni=9, nj=5, nk=6),
            "small": dict(ni=200, nj=220, nk=240),
        },
    ),
    Kernel(
        "2mm",
        "linear_algebra",
        k2mm,
        _k2mm_args,
        {
            "test": dict(ni=6, nj=7, nk=8, nl=9),
            "resized": dict(ni=7, nj=5, nk=6, nl=8),
            "small": dict(ni=300, nj=320, nk=340, nl=360),
        },
    ),
    Kernel(
        "3mm",
        "linear_algebra",
        k3mm,
        _k3mm_args,
        {
            "test": dict(ni=6, nj=7, nk=8, nl=9, nm=10),
            "resized": dict(ni=7, nj=5, nk=6, nl=8, nm=9),
            "small": dict(ni=300, nj=320, nk=340, nl=360, nm=380),
        },
    ),
    Kernel(
        "atax",
        "linear_algebra",
        atax,
        _atax_args,
        {"test": dict(m=8, n=10), "resized": dict(m=11, n=7), "small": dict(m=1900, n=2100)},
    ),
    Kernel(
        "bicg",
        "linear_algebra",
        bicg,
        _bicg_args,
        {"test": dict(m=8, n=10), "resized": dict(m=11, n=7), "small": dict(m=1900, n=2100)},
    ),
    Kernel("mvt", "linear_algebra", mvt, _mvt_args, {"test": dict(n=9), "resized": dict(n=12), "small": dict(n=2000)}),
    Kernel(
        "gesummv",
        "linear_algebra",
        gesummv,
        _gesummv_args,
        {"test": dict(n=9), "resized": dict(n=12), "small": dict(n=1400)},
    ),
    Kernel(
        "gemver",
        "linear_algebra",
        gemver,
        _gemver_args,
        {"test": dict(n=9), "resized": dict(n=12), "small": dict(n=1000)},
    ),
    Kernel(
        "syrk",
        "linear_algebra",
        syrk,
        _syrk_args,
        {"test": dict(n=7, m=6), "resized": dict(n=10, m=8), "small": dict(n=60, m=50)},
    ),
    Kernel(
        "syr2k",
        "linear_algebra",
        syr2k,
        _syr2k_args,
        {"test": dict(n=7, m=6), "resized": dict(n=10, m=8), "small": dict(n=50, m=40)},
    ),
    Kernel(
        "symm",
        "linear_algebra",
        symm,
        _symm_args,
        {"test": dict(m=7, n=8), "resized": dict(m=10, n=6), "small": dict(m=200, n=240)},
    ),
    Kernel(
        "trmm",
        "linear_algebra",
        trmm,
        _trmm_args,
        {"test": dict(m=7, n=8), "resized": dict(m=10, n=6), "small": dict(m=60, n=70)},
    ),
    Kernel(
        "doitgen",
        "linear_algebra",
        doitgen,
        _doitgen_args,
        {"test": dict(nr=5, nq=6, np_=7), "resized": dict(nr=6, nq=5, np_=9), "small": dict(nr=25, nq=20, np_=30)},
    ),
]
