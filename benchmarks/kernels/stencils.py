"""Stencils: PolyBench's time-stepped grids (jacobi_1d, jacobi_2d, heat_3d, seidel_2d, fdtd_2d,
adi) and the weather-model stencils of npbench (hdiff, horizontal diffusion; vadv, vertical
advection with a tridiagonal solve along each column)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .kernel import Kernel


def jacobi_1d(tsteps, A, B):
    for _ in range(1, tsteps):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])
    return A, B


def jacobi_2d(tsteps, A, B):
    for _ in range(1, tsteps):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])
    return A, B


def _heat_step(src, dst):
    inner = src[1:-1, 1:-1, 1:-1]
    dst[1:-1, 1:-1, 1:-1] = (
        0.125 * (src[2:, 1:-1, 1:-1] - 2.0 * inner + src[:-2, 1:-1, 1:-1])
        + 0.125 * (src[1:-1, 2:, 1:-1] - 2.0 * inner + src[1:-1, :-2, 1:-1])
        + 0.125 * (src[1:-1, 1:-1, 2:] - 2.0 * inner + src[1:-1, 1:-1, :-2])
        + inner
    )


def heat_3d(tsteps, A, B):
    for _ in range(1, tsteps):
        _heat_step(A, B)
        _heat_step(B, A)
    return A, B


def seidel_2d(tsteps, A):
    n = A.shape[0]
    for _ in range(tsteps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i, j] = (
                    A[i - 1, j - 1]
                    + A[i - 1, j]
                    + A[i - 1, j + 1]
                    + A[i, j - 1]
                    + A[i, j]
                    + A[i, j + 1]
                    + A[i + 1, j - 1]
                    + A[i + 1, j]
                    + A[i + 1, j + 1]
                ) / 9.0
    return A


def fdtd_2d(ex, ey, hz, fict):
    for t in range(fict.shape[0]):
        ey[0, :] = fict[t]
        ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])
    return ex, ey, hz


def adi(tsteps, u):
    n = u.shape[0]
    v = np.zeros_like(u)
    p = np.zeros_like(u)
    q = np.zeros_like(u)
    dx = 1.0 / n
    dt = 1.0 / tsteps
    mul1 = 2.0 * dt / (dx * dx)
    mul2 = 1.0 * dt / (dx * dx)
    a, b, c = -mul1 / 2.0, 1.0 + mul1, -mul1 / 2.0
    d, e, f = -mul2 / 2.0, 1.0 + mul2, -mul2 / 2.0
    for _ in range(tsteps):
        v[0, 1:-1] = 1.0
        p[1:-1, 0] = 0.0
        q[1:-1, 0] = v[0, 1:-1]
        for j in range(1, n - 1):
            pivot = a * p[1:-1, j - 1] + b
            p[1:-1, j] = -c / pivot
            q[1:-1, j] = (-d * u[j, :-2] + (1.0 + 2.0 * d) * u[j, 1:-1] - f * u[j, 2:] - a * q[1:-1, j - 1]) / pivot
        v[-1, 1:-1] = 1.0
        for j in range(n - 2, 0, -1):
            v[j, 1:-1] = p[1:-1, j] * v[j + 1, 1:-1] + q[1:-1, j]
        u[1:-1, 0] = 1.0
        p[1:-1, 0] = 0.0
        q[1:-1, 0] = u[1:-1, 0]
        for j in range(1, n - 1):
            pivot = d * p[1:-1, j - 1] + e
            p[1:-1, j] = -f / pivot
            q[1:-1, j] = (-a * v[:-2, j] + (1.0 + 2.0 * a) * v[1:-1, j] - c * v[2:, j] - d * q[1:-1, j - 1]) / pivot
        u[1:-1, -1] = 1.0
        for j in range(n - 2, 0, -1):
            u[1:-1, j] = p[1:-1, j] * u[1:-1, j + 1] + q[1:-1, j]
    return u


def hdiff(in_field, out_field, coeff):
    ni, nj, _ = out_field.shape
    lap = 4.0 * in_field[1 : ni + 3, 1 : nj + 3, :] - (
        in_field[2 : ni + 4, 1 : nj + 3, :]
        + in_field[: ni + 2, 1 : nj + 3, :]
        + in_field[1 : ni + 3, 2 : nj + 4, :]
        + in_field[1 : ni + 3, : nj + 2, :]
    )
    centre = in_field[2 : ni + 2, 2 : nj + 2, :]
    flux_x = lap[1:, 1 : nj + 1, :] - lap[:-1, 1 : nj + 1, :]
    gradient_x = in_field[2 : ni + 3, 2 : nj + 2, :] - in_field[1 : ni + 2, 2 : nj + 2, :]
    flux_x = np.where(flux_x * gradient_x > 0, 0, flux_x)
    flux_y = lap[1 : ni + 1, 1:, :] - lap[1 : ni + 1, :-1, :]
    gradient_y = in_field[2 : ni + 2, 2 : nj + 3, :] - in_field[2 : ni + 2, 1 : nj + 2, :]
    flux_y = np.where(flux_y * gradient_y > 0, 0, flux_y)
    out_field[:, :, :] = centre - coeff * (flux_x[1:, :, :] - flux_x[:-1, :, :] + flux_y[:, 1:, :] - flux_y[:, :-1, :])
    return out_field


def vadv(utens_stage, u_stage, wcon, u_pos, utens, dtr_stage):
    ni, nj, nk = utens_stage.shape
    ccol = np.zeros((ni, nj, nk), dtype=utens_stage.dtype)
    dcol = np.zeros((ni, nj, nk), dtype=utens_stage.dtype)
    gcv = 0.25 * (wcon[1:, :, 1] + wcon[:-1, :, 1])
    ccol[:, :, 0] = 0.5 * gcv
    divided = 1.0 / (dtr_stage - ccol[:, :, 0])
    correction = -0.5 * gcv * (u_stage[:, :, 1] - u_stage[:, :, 0])
    dcol[:, :, 0] = dtr_stage * u_pos[:, :, 0] + utens[:, :, 0] + utens_stage[:, :, 0] + correction
    ccol[:, :, 0] *= divided
    dcol[:, :, 0] *= divided
    for k in range(1, nk):
        gav = -0.25 * (wcon[1:, :, k] + wcon[:-1, :, k])
        acol = 0.5 * gav
        correction = -0.5 * gav * (u_stage[:, :, k - 1] - u_stage[:, :, k])
        if k < nk - 1:
            gcv = 0.25 * (wcon[1:, :, k + 1] + wcon[:-1, :, k + 1])
            ccol[:, :, k] = 0.5 * gcv
            correction -= 0.5 * gcv * (u_stage[:, :, k + 1] - u_stage[:, :, k])
        bcol = dtr_stage - acol - ccol[:, :, k]
        dcol[:, :, k] = dtr_stage * u_pos[:, :, k] + utens[:, :, k] + utens_stage[:, :, k] + correction
        divided = 1.0 / (bcol - ccol[:, :, k - 1] * acol)
        ccol[:, :, k] *= divided
        dcol[:, :, k] = (dcol[:, :, k] - dcol[:, :, k - 1] * acol) * divided
    column = dcol[:, :, nk - 1]
    utens_stage[:, :, nk - 1] = dtr_stage * (column - u_pos[:, :, nk - 1])
    for k in range(nk - 2, -1, -1):
        column = dcol[:, :, k] - ccol[:, :, k] * column
        utens_stage[:, :, k] = dtr_stage * (column - u_pos[:, :, k])
    return utens_stage


def _jacobi_1d_args(rng: np.random.Generator, n: int, tsteps: int) -> tuple[Any, ...]:
    return tsteps, rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)


def _jacobi_2d_args(rng: np.random.Generator, n: int, tsteps: int) -> tuple[Any, ...]:
    return tsteps, rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)


def _heat_3d_args(rng: np.random.Generator, n: int, tsteps: int) -> tuple[Any, ...]:
    return tsteps, rng.random((n, n, n)), rng.random((n, n, n))


def _seidel_2d_args(rng: np.random.Generator, n: int, tsteps: int) -> tuple[Any, ...]:
    return tsteps, rng.random((n, n))


def _fdtd_2d_args(rng: np.random.Generator, nx: int, ny: int, tmax: int) -> tuple[Any, ...]:
    return rng.random((nx, ny)), rng.random((nx, ny)), rng.random((nx, ny)), rng.random(tmax)


def _adi_args(rng: np.random.Generator, n: int, tsteps: int) -> tuple[Any, ...]:
    return tsteps, rng.random((n, n))


def _hdiff_args(rng: np.random.Generator, ni: int, nj: int, nk: int) -> tuple[Any, ...]:
    return rng.random((ni + 4, nj + 4, nk)), np.zeros((ni, nj, nk)), rng.random((ni, nj, nk))


def _vadv_args(rng: np.random.Generator, ni: int, nj: int, nk: int) -> tuple[Any, ...]:
    fields = [rng.random((ni, nj, nk)) for _ in range(2)]
    wcon = rng.random((ni + 1, nj, nk))
    return fields[0], fields[1], wcon, rng.random((ni, nj, nk)), rng.random((ni, nj, nk)), 3.0


KERNELS = [
    Kernel(
        "jacobi_1d",
        "stencils",
        jacobi_1d,
        _jacobi_1d_args,
        {
            "test": dict(n=12, tsteps=8),
            "resized": dict(n=15, tsteps=8),
            "small": dict(n=2000, tsteps=200),
        },
    ),
    Kernel(
        "jacobi_2d",
        "stencils",
        jacobi_2d,
        _jacobi_2d_args,
        {"test": dict(n=8, tsteps=6), "resized": dict(n=11, tsteps=6), "small": dict(n=150, tsteps=100)},
    ),
    Kernel(
        "heat_3d",
        "stencils",
        heat_3d,
        _heat_3d_args,
        {"test": dict(n=6, tsteps=6), "resized": dict(n=8, tsteps=6), "small": dict(n=30, tsteps=100)},
    ),
    Kernel(
        "seidel_2d",
        "stencils",
        seidel_2d,
        _seidel_2d_args,
        {"test": dict(n=7, tsteps=5), "resized": dict(n=9, tsteps=5), "small": dict(n=30, tsteps=6)},
    ),
    Kernel(
        "fdtd_2d",
        "stencils",
        fdtd_2d,
        _fdtd_2d_args,
        {
            "test": dict(nx=6, ny=7, tmax=6),
            "resized": dict(nx=8, ny=5, tmax=9),
            "small": dict(nx=120, ny=140, tmax=100),
        },
    ),
    Kernel(
        "adi",
        "stencils",
        adi,
        _adi_args,
        {"test": dict(n=8, tsteps=5), "resized": dict(n=11, tsteps=5), "small": dict(n=60, tsteps=20)},
    ),
    Kernel(
        "hdiff",
        "stencils",
        hdiff,
        _hdiff_args,
        {
            "test": dict(ni=6, nj=7, nk=5),
            "resized": dict(ni=8, nj=5, nk=6),
            "small": dict(ni=64, nj=64, nk=60),
        },
    ),
    Kernel(
        "vadv",
        "stencils",
        vadv,
        _vadv_args,
        {
            "test": dict(ni=6, nj=7, nk=8),
            "resized": dict(ni=8, nj=5, nk=10),
            "small": dict(ni=64, nj=64, nk=60),
        },
    ),
]
