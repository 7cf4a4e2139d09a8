"""Kernels written element by element, the way users write them for ``@numba.njit``: a stencil
with a time loop, LU and a triangular solve, a dynamic-programming table, n-body, Floyd-Warshall,
Mandelbrot and a CRC with bitwise operations on scalars. Plain NumPy and Python: the same
functions run eagerly, converted by dy2st, and under ``numba.njit`` in
``benchmarks/compiled_tier.py``."""

from __future__ import annotations

from typing import Any

import numpy as np

from .kernel import MEDIUM, Kernel


def jacobi_2d_elements(steps, A, B):
    n = A.shape[0]
    for _ in range(steps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                B[i, j] = 0.2 * (A[i, j] + A[i, j - 1] + A[i, j + 1] + A[i + 1, j] + A[i - 1, j])
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = 0.2 * (B[i, j] + B[i, j - 1] + B[i, j + 1] + B[i + 1, j] + B[i - 1, j])
    return A, B


def lu_elements(A):
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            s = A[i, j]
            for k in range(j):
                s -= A[i, k] * A[k, j]
            A[i, j] = s / A[j, j]
        for j in range(i, n):
            s = A[i, j]
            for k in range(i):
                s -= A[i, k] * A[k, j]
            A[i, j] = s
    return A


def trisolv_elements(L, b):
    n = b.shape[0]
    x = np.zeros(n)
    for i in range(n):
        s = b[i]
        for j in range(i):
            s -= L[i, j] * x[j]
        x[i] = s / L[i, i]
    return x


def edit_distance_elements(a, b):
    n, m = len(a), len(b)
    D = np.zeros((n + 1, m + 1), dtype=np.int64)
    for i in range(n + 1):
        D[i, 0] = i
    for j in range(m + 1):
        D[0, j] = j
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            best = D[i - 1, j] + 1
            if D[i, j - 1] + 1 < best:
                best = D[i, j - 1] + 1
            if D[i - 1, j - 1] + cost < best:
                best = D[i - 1, j - 1] + cost
            D[i, j] = best
    return D[n, m]


def nbody_elements(steps, dt, pos, vel, mass):
    n = pos.shape[0]
    for _ in range(steps):
        for i in range(n):
            ax = 0.0
            ay = 0.0
            az = 0.0
            for j in range(n):
                if i != j:
                    dx = pos[j, 0] - pos[i, 0]
                    dy = pos[j, 1] - pos[i, 1]
                    dz = pos[j, 2] - pos[i, 2]
                    r2 = dx * dx + dy * dy + dz * dz + 0.01
                    inv = mass[j] / (r2 * np.sqrt(r2))
                    ax += dx * inv
                    ay += dy * inv
                    az += dz * inv
            vel[i, 0] += dt * ax
            vel[i, 1] += dt * ay
            vel[i, 2] += dt * az
        for i in range(n):
            pos[i, 0] += dt * vel[i, 0]
            pos[i, 1] += dt * vel[i, 1]
            pos[i, 2] += dt * vel[i, 2]
    return pos, vel


def floyd_warshall_elements(paths):
    n = paths.shape[0]
    for k in range(n):
        for i in range(n):
            for j in range(n):
                through = paths[i, k] + paths[k, j]
                if through < paths[i, j]:
                    paths[i, j] = through
    return paths


def mandelbrot_elements(re, im, max_iterations, counts):
    for i in range(im.shape[0]):
        for j in range(re.shape[0]):
            x = 0.0
            y = 0.0
            k = 0
            while k < max_iterations and x * x + y * y <= 4.0:
                x, y = x * x - y * y + re[j], 2.0 * x * y + im[i]
                k += 1
            counts[i, j] = k
    return counts


def crc32_elements(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            if crc & 1:
                crc = (crc >> 1) ^ 0xEDB88320
            else:
                crc >>= 1
    return crc ^ 0xFFFFFFFF


def _jacobi_args(rng: np.random.Generator, n: int, steps: int) -> tuple[Any, ...]:
    return steps, rng.random((n, n)), rng.random((n, n))


def _lu_args(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return (rng.random((n, n)) + n * np.eye(n),)


def _trisolv_args(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return np.tril(rng.random((n, n))) + np.eye(n), rng.random(n)


def _edit_distance_args(rng: np.random.Generator, n: int, m: int) -> tuple[Any, ...]:
    return rng.integers(0, 4, n).astype(np.int8), rng.integers(0, 4, m).astype(np.int8)


def _nbody_args(rng: np.random.Generator, n: int, steps: int) -> tuple[Any, ...]:
    return steps, 0.01, rng.standard_normal((n, 3)), rng.standard_normal((n, 3)) * 0.1, rng.random(n) + 0.5


def _floyd_args(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    paths = rng.random((n, n)) * 10
    np.fill_diagonal(paths, 0.0)
    return (paths,)


def _mandelbrot_args(rng: np.random.Generator, nx: int, ny: int, iterations: int) -> tuple[Any, ...]:
    shift = rng.uniform(-0.05, 0.05)
    return np.linspace(-2.0 + shift, 0.6, nx), np.linspace(-1.1, 1.1, ny), iterations, np.zeros((ny, nx), np.int64)


def _crc_args(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return (rng.integers(0, 256, n).astype(np.int64),)


def _kernel(name: str, function: Any, arguments: Any, test: dict, resized: dict, small: dict, medium: dict) -> Kernel:
    sizes = {"test": test, "resized": resized, "small": small, MEDIUM: medium}
    return Kernel(name, "element_loops", function, arguments, sizes)


KERNELS = [
    _kernel(
        "jacobi_2d_elements",
        jacobi_2d_elements,
        _jacobi_args,
        dict(n=6, steps=2),
        dict(n=7, steps=2),
        dict(n=60, steps=10),
        dict(n=150, steps=20),
    ),
    _kernel("lu_elements", lu_elements, _lu_args, dict(n=5), dict(n=7), dict(n=60), dict(n=150)),
    _kernel("trisolv_elements", trisolv_elements, _trisolv_args, dict(n=6), dict(n=9), dict(n=300), dict(n=1500)),
    _kernel(
        "edit_distance_elements",
        edit_distance_elements,
        _edit_distance_args,
        dict(n=5, m=6),
        dict(n=7, m=4),
        dict(n=150, m=160),
        dict(n=800, m=800),
    ),
    _kernel(
        "nbody_elements",
        nbody_elements,
        _nbody_args,
        dict(n=4, steps=2),
        dict(n=5, steps=2),
        dict(n=40, steps=5),
        dict(n=150, steps=5),
    ),
    _kernel(
        "floyd_warshall_elements", floyd_warshall_elements, _floyd_args, dict(n=5), dict(n=6), dict(n=40), dict(n=120)
    ),
    _kernel(
        "mandelbrot_elements",
        mandelbrot_elements,
        _mandelbrot_args,
        dict(nx=6, ny=5, iterations=10),
        dict(nx=5, ny=7, iterations=10),
        dict(nx=60, ny=50, iterations=40),
        dict(nx=200, ny=150, iterations=100),
    ),
    _kernel("crc32_elements", crc32_elements, _crc_args, dict(n=9), dict(n=13), dict(n=5000), dict(n=100_000)),
]
