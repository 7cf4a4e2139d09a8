"""Large calls of compiled fused groups: every call hands back new arrays (the results of calls the
caller holds never share memory, also between threads), and a large call runs on every core or on
one, whichever was faster lately (``fused_kernel.CoreChoice``), with the same bits."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import dy2st
from dy2st.backend.numba.executor import TieredExecutor
from dy2st.backend.numba.fused_kernel import CoreChoice

numba = pytest.importorskip("numba")

# 4 MiB of float32: a large call, on every core or on one.
LARGE = (1 << 20) + 1000


def affine(x):
    return (x * 0.5 + 1.25) * x - 3.0


def affine_pair(x):
    y = x * 2.0 + 1.0
    return y, y * x - 3.0


def inputs(count: int = 3, size: int = LARGE) -> list[np.ndarray]:
    rng = np.random.default_rng(size)
    return [rng.standard_normal(size).astype(np.float32) for _ in range(count)]


def compiled(fn, x):
    static = dy2st.to_static(fn, backend="compiled")
    static(x)
    (entry,) = [c for entries in static._cache.values() for c in entries]
    executor = entry.executor
    assert isinstance(executor, TieredExecutor) and executor.tier == "compiled", getattr(executor, "failures", None)
    assert len(executor.kernels) == 1
    return static


def test_results_the_caller_holds_never_share_memory_and_keep_their_values():
    x, y, z = inputs()
    static = compiled(affine, x)
    first, second, third = static(x), static(y), static(z)
    assert not np.shares_memory(first, second) and not np.shares_memory(second, third)
    assert not np.shares_memory(first, third)
    for got, given in ((first, x), (second, y), (third, z)):
        np.testing.assert_array_equal(got, affine(given))


def test_threads_calling_at_once_each_get_their_own_result():
    x, y = inputs(2)
    static = compiled(affine, x)
    expected = {0: affine(x), 1: affine(y)}
    failures: list[int] = []

    def caller(which: int) -> None:
        given = (x, y)[which]
        for _ in range(40):
            result = static(given)
            if not np.array_equal(result, expected[which]):
                failures.append(which)

    threads = [threading.Thread(target=caller, args=(k % 2,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures


# --- every core or one: the same bits, whichever was faster lately ------------------------------
def test_a_large_call_runs_on_one_core_while_that_has_been_faster_and_tries_every_core_again():
    choice = CoreChoice()
    assert choice.parallel()
    choice.record(True, 0.0001, 1 << 22)  # the first call (threads starting) is not counted
    assert choice.parallel()  # each way is measured once first
    choice.record(True, 0.022, 1 << 22)  # every core, while other processes hold them
    assert not choice.parallel()
    choice.record(False, 0.003, 1 << 22)
    picks = [choice.parallel() for _ in range(2 * CoreChoice.RETRY_EVERY)]
    assert picks.count(True) == 2  # tried again every RETRY_EVERY calls
    choice.record(True, 0.0015, 1 << 22)  # the cores are free again
    assert choice.parallel()


def test_both_loops_give_the_same_bits_whichever_runs():
    x, y = inputs(2, size=(1 << 17) + 5)  # above PARALLEL_ELEMENTS: the choice is made
    static = compiled(affine, x)
    (kernel,) = next(iter(static._cache.values()))[0].executor.kernels.values()
    results = []
    for parallel in (True, False):
        kernel.cores.seconds_per_element = {True: 1.0 if not parallel else 0.0, False: 0.5}
        kernel.cores.calls = 1  # not a retry
        results.append(static(y))
    np.testing.assert_array_equal(results[0], affine(y))
    np.testing.assert_array_equal(results[1], affine(y))
