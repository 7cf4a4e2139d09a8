"""Time-stepped simulations in the npbench style: an n-body leapfrog integrator that records the
energy at every step, lid-driven cavity flow (Navier-Stokes with a pressure Poisson iteration
inside each step) and Gray-Scott reaction-diffusion on a periodic grid."""

from __future__ import annotations

from typing import Any

import numpy as np

from .kernel import Kernel


def _accelerations(pos, mass, gravity, softening):
    dx = pos[:, 0:1].T - pos[:, 0:1]
    dy = pos[:, 1:2].T - pos[:, 1:2]
    dz = pos[:, 2:3].T - pos[:, 2:3]
    inv_r3 = (dx**2 + dy**2 + dz**2 + softening**2) ** -1.5
    ax = gravity * (dx * inv_r3) @ mass
    ay = gravity * (dy * inv_r3) @ mass
    az = gravity * (dz * inv_r3) @ mass
    return np.hstack((ax, ay, az))


def _energy(pos, vel, mass, gravity, softening):
    kinetic = 0.5 * np.sum(mass * vel**2)
    dx = pos[:, 0:1].T - pos[:, 0:1]
    dy = pos[:, 1:2].T - pos[:, 1:2]
    dz = pos[:, 2:3].T - pos[:, 2:3]
    inv_r = np.triu(1.0 / np.sqrt(dx**2 + dy**2 + dz**2 + softening**2), 1)
    potential = gravity * np.sum(np.sum(-(mass * mass.T) * inv_r))
    return kinetic, potential


def nbody(mass, pos, vel, steps, dt, gravity, softening):
    vel -= np.mean(mass * vel, 0) / np.mean(mass)
    acc = _accelerations(pos, mass, gravity, softening)
    kinetic = np.zeros(steps + 1)
    potential = np.zeros(steps + 1)
    kinetic[0], potential[0] = _energy(pos, vel, mass, gravity, softening)
    for i in range(1, steps + 1):
        vel += acc * dt / 2.0
        pos += vel * dt
        acc = _accelerations(pos, mass, gravity, softening)
        vel += acc * dt / 2.0
        kinetic[i], potential[i] = _energy(pos, vel, mass, gravity, softening)
    return kinetic, potential


def _pressure_source(rho, dt, u, v, dx, dy):
    du_dx = (u[1:-1, 2:] - u[1:-1, :-2]) / (2 * dx)
    dv_dy = (v[2:, 1:-1] - v[:-2, 1:-1]) / (2 * dy)
    du_dy = (u[2:, 1:-1] - u[:-2, 1:-1]) / (2 * dy)
    dv_dx = (v[1:-1, 2:] - v[1:-1, :-2]) / (2 * dx)
    return rho * (1 / dt * (du_dx + dv_dy) - du_dx**2 - 2 * du_dy * dv_dx - dv_dy**2)


def cavity_flow(nt, nit, u, v, p, dt, rho, nu):
    ny, nx = u.shape
    dx = 2.0 / (nx - 1)
    dy = 2.0 / (ny - 1)
    b = np.zeros((ny, nx))
    for _ in range(nt):
        un = u.copy()
        vn = v.copy()
        b[1:-1, 1:-1] = _pressure_source(rho, dt, u, v, dx, dy)
        for _ in range(nit):
            pn = p.copy()
            p[1:-1, 1:-1] = (
                (pn[1:-1, 2:] + pn[1:-1, :-2]) * dy**2
                + (pn[2:, 1:-1] + pn[:-2, 1:-1]) * dx**2
                - dx**2 * dy**2 * b[1:-1, 1:-1]
            ) / (2 * (dx**2 + dy**2))
            p[:, -1] = p[:, -2]
            p[0, :] = p[1, :]
            p[:, 0] = p[:, 1]
            p[-1, :] = 0
        u[1:-1, 1:-1] = (
            un[1:-1, 1:-1]
            - un[1:-1, 1:-1] * dt / dx * (un[1:-1, 1:-1] - un[1:-1, :-2])
            - vn[1:-1, 1:-1] * dt / dy * (un[1:-1, 1:-1] - un[:-2, 1:-1])
            - dt / (2 * rho * dx) * (p[1:-1, 2:] - p[1:-1, :-2])
            + nu * dt / dx**2 * (un[1:-1, 2:] - 2 * un[1:-1, 1:-1] + un[1:-1, :-2])
            + nu * dt / dy**2 * (un[2:, 1:-1] - 2 * un[1:-1, 1:-1] + un[:-2, 1:-1])
        )
        v[1:-1, 1:-1] = (
            vn[1:-1, 1:-1]
            - un[1:-1, 1:-1] * dt / dx * (vn[1:-1, 1:-1] - vn[1:-1, :-2])
            - vn[1:-1, 1:-1] * dt / dy * (vn[1:-1, 1:-1] - vn[:-2, 1:-1])
            - dt / (2 * rho * dy) * (p[2:, 1:-1] - p[:-2, 1:-1])
            + nu * dt / dx**2 * (vn[1:-1, 2:] - 2 * vn[1:-1, 1:-1] + vn[1:-1, :-2])
            + nu * dt / dy**2 * (vn[2:, 1:-1] - 2 * vn[1:-1, 1:-1] + vn[:-2, 1:-1])
        )
        u[0, :] = 0
        u[:, 0] = 0
        u[:, -1] = 0
        u[-1, :] = 1
        v[0, :] = 0
        v[-1, :] = 0
        v[:, 0] = 0
        v[:, -1] = 0
    return u, v, p


def _laplacian(z):
    padded = np.pad(z, 1, mode="wrap")
    return padded[:-2, 1:-1] + padded[2:, 1:-1] + padded[1:-1, :-2] + padded[1:-1, 2:] - 4 * z


def gray_scott(u, v, steps, feed, kill):
    for _ in range(steps):
        reaction = u * v * v
        u += 0.16 * _laplacian(u) - reaction + feed * (1 - u)
        v += 0.08 * _laplacian(v) + reaction - (feed + kill) * v
    return u, v


def _nbody_args(rng: np.random.Generator, n: int, steps: int) -> tuple[Any, ...]:
    mass = 20.0 * np.ones((n, 1)) / n
    return mass, rng.standard_normal((n, 3)), rng.standard_normal((n, 3)), steps, 0.01, 1.0, 0.1


def _cavity_args(rng: np.random.Generator, n: int, nt: int, nit: int) -> tuple[Any, ...]:
    u = rng.random((n, n)) * 0.01
    v = rng.random((n, n)) * 0.01
    return nt, nit, u, v, rng.random((n, n)) * 0.01, 0.001, 1.0, 0.1


def _gray_scott_args(rng: np.random.Generator, n: int, steps: int) -> tuple[Any, ...]:
    u = np.ones((n, n), dtype=np.float32)
    v = np.zeros((n, n), dtype=np.float32)
    centre = slice(n // 4, 3 * n // 4)
    u[centre, centre] = 0.5
    v[centre, centre] = 0.25
    v += rng.random((n, n), dtype=np.float32) * 0.05
    return u, v, steps, 0.035, 0.06


KERNELS = [
    Kernel(
        "nbody",
        "simulations",
        nbody,
        _nbody_args,
        {"test": dict(n=8, steps=6), "resized": dict(n=11, steps=6), "small": dict(n=100, steps=50)},
    ),
    Kernel(
        "cavity_flow",
        "simulations",
        cavity_flow,
        _cavity_args,
        {
            "test": dict(n=8, nt=5, nit=6),
            "resized": dict(n=11, nt=5, nit=6),
            "small": dict(n=41, nt=50, nit=20),
        },
    ),
    Kernel(
        "gray_scott",
        "simulations",
        gray_scott,
        _gray_scott_args,
        {"test": dict(n=8, steps=6), "resized": dict(n=12, steps=6), "small": dict(n=128, steps=100)},
    ),
]
