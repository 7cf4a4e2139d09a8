"""Python numbers as graph inputs: a call with a new learning rate reuses the graph.

    python benchmarks/number_inputs.py

A step ``x - lr * np.sin(x)`` on 64 floats, called with a new Python float ``lr`` at every call
(a schedule) and with the same one, three ways in one run: eagerly, converted (``lr`` becomes a
graph input once its value changes), and converted with ``static_argnames="lr"`` (every value
builds a graph, as every Python number did before number inputs). The graphs are built before
the timings.
Medians of interleaved repeats, and the ratios to eager.
"""

from __future__ import annotations

import statistics
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import dy2st

REPEATS = 7
CALLS = 200


def step(x, lr):
    return x - lr * np.sin(x)


def _schedule_time(fn: Callable[..., Any], x: np.ndarray, first_rate: float) -> float:
    """Seconds per call over ``CALLS`` calls, each with a learning rate not seen before."""
    start = time.perf_counter()
    for k in range(CALLS):
        fn(x, first_rate + k * 1e-9)
    return (time.perf_counter() - start) / CALLS


def _same_rate_time(fn: Callable[..., Any], x: np.ndarray) -> float:
    start = time.perf_counter()
    for _ in range(CALLS * 10):
        fn(x, 0.1)
    return (time.perf_counter() - start) / (CALLS * 10)


def main() -> None:
    x = np.linspace(0.0, 1.0, 64)
    rows: dict[str, list[list[float]]] = {"new lr at each call": [[], [], []], "same lr": [[], [], []]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dy2st.RetracingWarning)
        for repeat in range(REPEATS):
            converted = dy2st.to_static(step)
            constant = dy2st.to_static(step, static_argnames="lr", max_graphs=CALLS * REPEATS)
            converted(x, -1.0)  # the builds, outside the timings: the first value's graph, and
            converted(x, -2.0)  # the graph lr is an input of once it has changed
            constant(x, -1.0)
            for column, fn in enumerate((step, converted, constant)):
                rows["new lr at each call"][column].append(_schedule_time(fn, x, 0.1 + repeat))
                rows["same lr"][column].append(_same_rate_time(fn, x))
    print(f"{'calls':22} {'eager us':>10} {'dy2st us':>10} {'ratio':>7} {'static lr us':>13} {'ratio':>7}")
    for name, columns in rows.items():
        eager, inputs, static = (statistics.median(c) * 1e6 for c in columns)
        print(f"{name:22} {eager:10.2f} {inputs:10.2f} {inputs / eager:6.2f}x {static:13.2f} {static / eager:6.2f}x")


if __name__ == "__main__":
    main()
