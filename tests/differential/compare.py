"""Where a converted run's values differ from eager's, as data the report can group by.

``eager_parity.same_value`` asserts; the differential runner needs to know *what* differs (a
type, a shape, a dtype, the values, a generator's state) and *where* (a result, an argument,
a global), so that a thousand failing programs fall into a handful of failure classes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

GENERATORS = (np.random.Generator, np.random.RandomState)


@dataclass(frozen=True)
class Difference:
    where: str  # "result[1]", "argument 0", "global W", "np.random state"
    aspect: str  # "type", "length", "keys", "shape", "dtype", "values", "signs of zeros", "generator state"
    detail: str  # what each side had, for the report

    def __str__(self) -> str:
        return f"{self.where}: {self.aspect} differs: {self.detail}"


def generator_state(generator):
    """The state that decides a generator's next draws (what eager and converted must share)."""
    if isinstance(generator, np.random.RandomState):
        return generator.get_state(legacy=False)
    return generator.bit_generator.state


def type_name(value) -> str:
    """``np.bool`` and ``bool`` are told apart."""
    cls = type(value)
    return f"np.{cls.__name__}" if cls.__module__ == "numpy" else cls.__name__


def difference(actual, expected, where: str = "result") -> Difference | None:
    """The first way ``actual`` (converted) differs from ``expected`` (eager), or None.

    Strict as ``eager_parity.same_value``: ``np.float64`` is not ``float`` is not a 0-d array,
    and values must be identical (NaNs in the same places), also in the signs of zeros
    (``1 / -0.0`` is ``-inf``). Generators compare by state.
    """
    if type(actual) is not type(expected):
        return Difference(where, "type", f"{type_name(actual)} != {type_name(expected)}")
    if isinstance(expected, GENERATORS):
        return _first(
            difference(generator_state(actual), generator_state(expected), where),
            lambda found: Difference(where, "generator state", found.detail),
        )
    if isinstance(expected, (tuple, list)):
        return _sequence_difference(actual, expected, where)
    if isinstance(expected, dict):
        if actual.keys() != expected.keys():
            return Difference(where, "keys", f"{sorted(actual)} != {sorted(expected)}")
        return _first_of(difference(actual[key], expected[key], f"{where}[{key!r}]") for key in expected)
    if isinstance(expected, (np.ndarray, np.generic)):
        return _array_difference(actual, expected, where)
    if isinstance(expected, float):
        return _array_difference(np.float64(actual), np.float64(expected), where)
    if actual == expected:
        return None
    return Difference(where, "values", f"{actual!r} != {expected!r}")


def _sequence_difference(actual, expected, where: str) -> Difference | None:
    if len(actual) != len(expected):
        return Difference(where, "length", f"{len(actual)} != {len(expected)}")
    return _first_of(difference(a, e, f"{where}[{i}]") for i, (a, e) in enumerate(zip(actual, expected)))


# On the compiled tier, math functions (exp, tanh, cbrt, ...) are within 4 ulp of NumPy's and NaNs
# may carry another sign (docs/compiled-tier.md): floats compare within that there.
COMPILED_TIER_ULPS = 4


def within_compiled_tier_ulps(actual, expected) -> bool:
    """Equal within ``COMPILED_TIER_ULPS`` (NaNs equal whatever their sign), when the compiled
    tier runs (``DY2ST_BACKEND=compiled``); else never (exact comparison only)."""
    if os.environ.get("DY2ST_BACKEND") != "compiled" or actual.dtype.kind != "f":
        return False
    both_nan = np.isnan(actual) & np.isnan(expected)
    same = (actual == expected) | both_nan
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf: such elements compare by ==
        close = np.abs(actual - expected) <= COMPILED_TIER_ULPS * np.spacing(np.abs(expected))
    return bool(np.all(same | (close & np.isfinite(expected))))


def _array_difference(actual, expected, where: str) -> Difference | None:
    if actual.shape != expected.shape:
        return Difference(where, "shape", f"{actual.shape} != {expected.shape}")
    if actual.dtype != expected.dtype:
        return Difference(where, "dtype", f"{actual.dtype} != {expected.dtype}")
    if within_compiled_tier_ulps(actual, expected):
        return None
    if not np.array_equal(actual, expected, equal_nan=actual.dtype.kind in "fc"):
        return Difference(where, "values", f"{actual!r} != {expected!r}")
    if actual.dtype.kind == "f" and not np.array_equal(np.signbit(actual), np.signbit(expected)):
        return Difference(where, "signs of zeros", f"{actual!r} != {expected!r}")
    return None


def _first_of(differences) -> Difference | None:
    return next((found for found in differences if found is not None), None)


def _first(found: Difference | None, relabel) -> Difference | None:
    return None if found is None else relabel(found)
