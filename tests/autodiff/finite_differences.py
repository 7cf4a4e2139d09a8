"""Central finite differences in float64: the reference the gradient tests compare against."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import dy2st


def numerical_gradient(f: Callable[..., Any], args: tuple[Any, ...], k: int, eps: float = 1e-6) -> Any:
    """d f(*args) / d args[k] by central differences, one element at a time (eager NumPy)."""
    x = np.array(args[k], dtype=np.float64)
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        values = []
        for step in (eps, -eps):
            moved = x.copy()
            moved[index] += step
            shifted = list(args)
            shifted[k] = moved if isinstance(args[k], np.ndarray) else float(moved)
            values.append(float(f(*shifted)))
        grad[index] = (values[0] - values[1]) / (2 * eps)
    return grad


def assert_gradient_matches(f: Callable[..., Any], *args: Any, argnums: int = 0, rtol: float = 1e-6) -> None:
    """dy2st.grad(f) equals the finite-difference gradient (relative error below ``rtol``, with an
    absolute floor for entries near zero), and has the argument's shape and dtype."""
    got = dy2st.grad(f, argnums=argnums)(*args)
    want = numerical_gradient(f, args, argnums)
    assert np.shape(got) == np.shape(args[argnums])
    assert np.asarray(got).dtype == np.asarray(args[argnums]).dtype
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)
