"""The ``Kernel`` record of the suite, argument copying, and the comparison of a converted result
with eager NumPy's that the runner and the tests share."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

PRESETS = ("test", "small")
"""Sizes every kernel has: "test" runs eagerly in well under 10 ms, "small" in about 0.5-50 ms."""

MEDIUM = "medium"
"""A size only the element-loop kernels have: compiled code runs each call in about 0.1-3 ms,
where the loops' machine code, not the Python of a call (about a microsecond), sets the time;
eager code takes up to half a second. ``python benchmarks/compiled_tier.py --preset medium``."""

RESIZED = "resized"
"""A third tiny size whose arrays have other sizes than at "test": the tests' call that makes a
converted function take new sizes."""


@dataclass(frozen=True)
class Kernel:
    """One benchmark kernel: its function and how to make its arguments at each preset.

    ``arguments(rng, **sizes[preset])`` returns the positional arguments: arrays drawn from
    ``rng`` and Python ints and floats (the sizes and the constants of the kernel).
    """

    name: str
    family: str
    function: Callable[..., Any]
    arguments: Callable[..., tuple[Any, ...]]
    sizes: Mapping[str, Mapping[str, int]]

    def make(self, size_name: str, seed: int = 0) -> tuple[Any, ...]:
        return self.arguments(np.random.default_rng(seed), **self.sizes[size_name])


def copy_arguments(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """Fresh copies of the array arguments (kernels update them in place); other values as they are."""
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def tolerance(dtype: np.dtype[Any]) -> float:
    """The relative tolerance for values of ``dtype``: 1e-4 for single precision, else 1e-9."""
    return 1e-4 if dtype in (np.float32, np.complex64, np.float16) else 1e-9


def difference(actual: Any, expected: Any, where: str = "result") -> str | None:
    """How ``actual`` differs from ``expected`` (type, shape, dtype or values), or None when it
    does not: arrays and NumPy scalars within ``tolerance`` of their dtype (exactly for integers
    and booleans), tuples, lists and Python numbers element by element."""
    if type(actual) is not type(expected):
        return f"{where}: type {type(actual).__name__}, eager gives {type(expected).__name__}"
    if isinstance(expected, tuple | list):
        if len(actual) != len(expected):
            return f"{where}: length {len(actual)}, eager gives {len(expected)}"
        for index, (a, e) in enumerate(zip(actual, expected)):
            found = difference(a, e, f"{where}[{index}]")
            if found is not None:
                return found
        return None
    if isinstance(expected, np.ndarray | np.generic):
        if actual.shape != expected.shape:
            return f"{where}: shape {actual.shape}, eager gives {expected.shape}"
        if actual.dtype != expected.dtype:
            return f"{where}: dtype {actual.dtype}, eager gives {expected.dtype}"
    return _value_difference(np.asarray(actual), np.asarray(expected), where)


def _value_difference(actual: np.ndarray, expected: np.ndarray, where: str) -> str | None:
    if expected.dtype.kind in "fc":
        equal = np.allclose(actual, expected, rtol=tolerance(expected.dtype), equal_nan=True)
    else:
        equal = np.array_equal(actual, expected)
    if equal:
        return None
    if expected.size == 1:
        return f"{where}: {actual.item()!r}, eager gives {expected.item()!r}"
    error = np.abs(actual.astype(np.complex128) - expected.astype(np.complex128))
    flat_worst = int(np.argmax(np.where(np.isnan(error), np.inf, error)))
    worst = tuple(int(i) for i in np.unravel_index(flat_worst, expected.shape))
    return f"{where}: {actual[worst]!r} at {worst}, eager gives {expected[worst]!r}"
