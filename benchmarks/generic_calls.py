"""The generic layer's cost per op: NumPy functions staged as ``numpy_call`` against calling them.

    python benchmarks/generic_calls.py            # medians of alternating repeats
    python benchmarks/generic_calls.py --quick    # fewer repeats: a smoke run

Each row chains one function 20 times in a converted function (``x = np.flip(x)``, ...) on a
small array, so the work per call is a few hundred nanoseconds and what the table shows is the
overhead: the converted call minus the eager one, divided by the 20 ops (the converted call's
own fixed cost, about a microsecond, spread over them). Functions the generic layer runs (no
precise rule) are checked to be ``numpy_call`` ops in the graph.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

import dy2st
from dy2st.ops.generic import NUMPY_CALL

CHAIN = 20
CALLS = {
    "np.flip": "np.flip(x)",
    "np.roll": "np.roll(x, 1)",
    "np.fliplr": "np.fliplr(x.reshape(4, 4)).reshape(16)",
    "np.fft.fftshift": "np.fft.fftshift(x)",
    "np.nan_to_num": "np.nan_to_num(x)",
    "np.linalg.inv (4x4)": "np.linalg.inv(x.reshape(4, 4) + 4 * np.eye(4)).reshape(16)",
    "np.polyval": "np.polyval([0.5, 0.25], x)",
}


def chained(expression: str, directory: Path, index: int):
    """``f(x)`` applying ``expression`` (in ``x``) ``CHAIN`` times, from a module file."""
    body = "".join(f"    x = {expression}\n" for _ in range(CHAIN))
    path = directory / f"generic_chain_{index}.py"
    path.write_text("import numpy as np\n\n\ndef f(x):\n" + body + "    return x\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


def median_pair(eager, static, x, repeats: int, calls: int) -> tuple[float, float]:
    eager_times, static_times = [], []
    for _ in range(repeats):
        for fn, times in ((eager, eager_times), (static, static_times)):
            start = time.perf_counter()
            for _ in range(calls):
                fn(x)
            times.append((time.perf_counter() - start) / calls)
    return statistics.median(eager_times), statistics.median(static_times)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    options = parser.parse_args()
    repeats, calls = (3, 200) if options.quick else (9, 2000)
    x = np.linspace(0.5, 1.5, 16)
    print(f"{'function':<22} {'generic':>8} {'eager us':>9} {'dy2st us':>9} {'per op us':>10}")
    with tempfile.TemporaryDirectory() as directory:
        for index, (name, expression) in enumerate(CALLS.items()):
            eager = chained(textwrap.dedent(expression), Path(directory), index)
            static = dy2st.to_static(eager)
            np.testing.assert_allclose(static(x), eager(x))
            generic = any(op.name == NUMPY_CALL for op in static.graph(x).walk())
            eager_time, static_time = median_pair(eager, static, x, repeats, calls)
            per_op = (static_time - eager_time) / CHAIN
            print(
                f"{name:<22} {str(generic):>8} {eager_time * 1e6:>9.2f} {static_time * 1e6:>9.2f} {per_op * 1e6:>10.2f}"
            )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
