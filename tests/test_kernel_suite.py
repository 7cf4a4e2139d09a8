"""The kernel suite of benchmarks/kernels (PolyBench- and npbench-style kernels written with Python
loops, slices and in-place updates): each converted kernel gives eager NumPy's result (values within
rtol 1e-9 for double and 1e-4 for single precision, type, shape, dtype) and leaves every array
argument as eager NumPy leaves it, on the "test" preset, again with other data of the same shapes,
and once more at other sizes. They are the kernels benchmarks/kernel_suite.py times (at larger sizes)."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import dy2st

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
from kernels import KERNELS, MEDIUM, PRESETS, RESIZED, Kernel, copy_arguments, difference  # noqa: E402

# Kernels that fail today, with the error they raise and its message (strict: a fix shows as XPASS).
FAILING: dict[str, tuple[type[Exception], str]] = {}

# (preset, seed) of the three calls each converted kernel gets: the first builds the graph, the
# second runs it on other data of the same shapes, the third takes other sizes.
CALLS = [("test", 0), ("test", 1), (RESIZED, 2)]


def _kernel_params() -> list:
    params = []
    for kernel in KERNELS:
        marks = []
        if kernel.name in FAILING:
            error, reason = FAILING[kernel.name]
            marks.append(pytest.mark.xfail(raises=error, strict=True, reason=reason))
        params.append(pytest.param(kernel, id=kernel.name, marks=marks))
    return params


def _signature(args: tuple) -> list:
    return [(a.shape, a.dtype) if isinstance(a, np.ndarray) else a for a in args]


@pytest.mark.parametrize("kernel", _kernel_params())
def test_converted_kernel_matches_eager(kernel: Kernel):
    static = dy2st.to_static(kernel.function)
    for preset, seed in CALLS:
        args = kernel.make(preset, seed)
        eager_args, converted_args = copy_arguments(args), copy_arguments(args)
        expected = kernel.function(*eager_args)
        actual = static(*converted_args)
        call = f"{kernel.name}, preset {preset!r}, seed {seed}"
        assert difference(actual, expected) is None, f"{call}: {difference(actual, expected)}"
        found = difference(converted_args, eager_args, "arguments")
        assert found is None, f"{call}: {found}"


@pytest.mark.parametrize("kernel", KERNELS, ids=[kernel.name for kernel in KERNELS])
def test_seeds_change_the_data_and_keep_the_shapes(kernel: Kernel):
    first, second = kernel.make("test", 0), kernel.make("test", 1)
    assert _signature(first) == _signature(second)
    arrays = [(a, b) for a, b in zip(first, second) if isinstance(a, np.ndarray) and a.size > 1]
    assert any(not np.array_equal(a, b) for a, b in arrays)


def test_every_kernel_has_a_unique_name_and_every_size():
    names = [kernel.name for kernel in KERNELS]
    assert len(names) == len(set(names))
    assert set(FAILING) <= set(names)
    for kernel in KERNELS:
        extra = {MEDIUM} if kernel.family == "element_loops" else set()  # compiled_tier.py --preset medium
        assert set(kernel.sizes) == {*PRESETS, RESIZED, *extra}, kernel.name


def test_the_runner_prints_a_row_per_kernel_and_the_geometric_mean(tmp_path):
    out = tmp_path / "kernels.json"
    runner = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "kernel_suite.py"
    done = subprocess.run(
        [sys.executable, str(runner), "--quick", "--only", "lu,spmv", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    assert "geometric mean dy2st/eager over the 2 kernels" in done.stdout
    rows = json.loads(out.read_text())["rows"]
    assert [row["name"] for row in rows] == ["lu", "spmv"]
    assert all(row["ratio"] > 0 for row in rows)
