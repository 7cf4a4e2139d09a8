"""Data analysis: PolyBench's covariance and correlation (a loop over the columns filling a
triangle), and npbench-style applications: a softmax over the last axis, the arc distance between
points on a sphere, azimuthal integration (a mask per radial bin) and k-means iterations."""

from __future__ import annotations

from typing import Any

import numpy as np

from .kernel import Kernel


def covariance(data):
    n, m = data.shape
    mean = np.mean(data, axis=0)
    data -= mean
    cov = np.zeros((m, m), dtype=data.dtype)
    for i in range(m):
        cov[i, i:] = data[:, i] @ data[:, i:] / (n - 1.0)
        cov[i:, i] = cov[i, i:]
    return cov


def correlation(data):
    n, m = data.shape
    mean = np.mean(data, axis=0)
    stddev = np.std(data, axis=0)
    stddev[stddev <= 0.1] = 1.0
    data -= mean
    data /= np.sqrt(n) * stddev
    corr = np.eye(m, dtype=data.dtype)
    for i in range(m - 1):
        corr[i + 1 :, i] = corr[i, i + 1 :] = data[:, i] @ data[:, i + 1 :]
    return corr


def softmax(x):
    shifted = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return shifted / np.sum(shifted, axis=-1, keepdims=True)


def arc_distance(theta_1, phi_1, theta_2, phi_2):
    temp = np.sin((theta_2 - theta_1) / 2) ** 2 + np.cos(theta_1) * np.cos(theta_2) * np.sin((phi_2 - phi_1) / 2) ** 2
    return 2 * np.arctan2(np.sqrt(temp), np.sqrt(1 - temp))


def azimint(data, radius, npt):
    rmax = radius.max()
    res = np.zeros(npt, dtype=np.float64)
    for i in range(npt):
        r1 = rmax * i / npt
        r2 = rmax * (i + 1) / npt
        in_bin = np.logical_and(r1 <= radius, radius < r2)
        res[i] = data[in_bin].mean()
    return res


def kmeans(points, centers, iterations):
    k = centers.shape[0]
    labels = np.zeros(points.shape[0], dtype=np.int64)
    for _ in range(iterations):
        distances = ((points[:, None, :] - centers[None, :, :]) ** 2).sum(axis=2)
        labels = np.argmin(distances, axis=1)
        for c in range(k):
            members = points[labels == c]
            if len(members) > 0:
                centers[c] = members.mean(axis=0)
    return centers, labels


def _table_args(rng: np.random.Generator, n: int, m: int) -> tuple[Any, ...]:
    return (rng.random((n, m)) * rng.uniform(0.5, 2.0, m),)


def _softmax_args(rng: np.random.Generator, batch: int, heads: int, length: int) -> tuple[Any, ...]:
    return (rng.standard_normal((batch, heads, length, length), dtype=np.float32),)


def _arc_distance_args(rng: np.random.Generator, n: int) -> tuple[Any, ...]:
    return tuple(rng.random(n) * np.pi for _ in range(4))


def _azimint_args(rng: np.random.Generator, n: int, npt: int) -> tuple[Any, ...]:
    return rng.random(n), rng.random(n), npt


def _kmeans_args(rng: np.random.Generator, n: int, k: int, dims: int, iterations: int) -> tuple[Any, ...]:
    points = rng.standard_normal((n, dims)) + rng.integers(0, 4, (n, 1)) * 3.0
    return points, points[rng.choice(n, k, replace=False)].copy(), iterations


KERNELS = [
    Kernel(
        "covariance",
        "data_analysis",
        covariance,
        _table_args,
        {"test": dict(n=10, m=8), "resized": dict(n=13, m=6), "small": dict(n=500, m=240)},
    ),
    Kernel(
        "correlation",
        "data_analysis",
        correlation,
        _table_args,
        {"test": dict(n=10, m=8), "resized": dict(n=13, m=6), "small": dict(n=500, m=240)},
    ),
    Kernel(
        "softmax",
        "data_analysis",
        softmax,
        _softmax_args,
        {
            "test": dict(batch=2, heads=3, length=8),
            "resized": dict(batch=3, heads=2, length=6),
            "small": dict(batch=8, heads=8, length=128),
        },
    ),
    Kernel(
        "arc_distance",
        "data_analysis",
        arc_distance,
        _arc_distance_args,
        {"test": dict(n=50), "resized": dict(n=37), "small": dict(n=200_000)},
    ),
    Kernel(
        "azimint",
        "data_analysis",
        azimint,
        _azimint_args,
        {"test": dict(n=400, npt=8), "resized": dict(n=300, npt=6), "small": dict(n=40_000, npt=100)},
    ),
    Kernel(
        "kmeans",
        "data_analysis",
        kmeans,
        _kmeans_args,
        {
            "test": dict(n=40, k=4, dims=2, iterations=5),
            "resized": dict(n=30, k=3, dims=3, iterations=5),
            "small": dict(n=2000, k=8, dims=3, iterations=20),
        },
    ),
]
