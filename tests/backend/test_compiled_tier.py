"""The compiled tier (Numba): loops over elements and scalars compiled to machine code give eager
NumPy's results exactly, raise eager's exceptions at the user's line, and never make a function
fail; tiered execution swaps compiled code in; compiled code is cached on disk."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import dy2st
from dy2st.backend.numba.executor import TieredExecutor
from dy2st.backend.numba.support import COMPILED_LOOP, COMPILED_UFUNCS
from eager_parity import assert_like_eager, same_value

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "benchmarks"))
from kernels import BY_NAME, MEDIUM  # noqa: E402

# Kernels of the benchmark suite, written as NumPy users write them.
crc16 = BY_NAME["crc16"].function
floyd_warshall = BY_NAME["floyd_warshall_elements"].function
forward_substitution = BY_NAME["trisolv_elements"].function
syrk_rows = BY_NAME["syrk"].function
syr2k = BY_NAME["syr2k"].function

numba = pytest.importorskip("numba")
from kernels.solvers import cholesky  # noqa: E402


def executor_of(static, *args):
    static(*args)
    (compiled,) = [c for entries in [*static._cache.values(), *static._dynamic_cache.values()] for c in entries]
    return compiled.executor


def compiled_like_eager(fn, *args):
    """Eager and compiled give the same results and final arguments; and the loop did compile."""
    static = dy2st.to_static(fn, backend="compiled")
    result = assert_like_eager(fn, *args, converted=static)
    executor = executor_of(static, *[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    assert isinstance(executor, TieredExecutor) and executor.tier == "compiled", getattr(executor, "failures", None)
    return result


# --- kernels written as NumPy users write element loops -------------------------------------------
def insertion_sort(a):
    for i in range(1, len(a)):
        key = a[i]
        j = i - 1
        while j >= 0 and a[j] > key:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = key
    return a


def newton_sqrt(a):
    x = a
    it = 0
    while abs(x * x - a) > 1e-12 * a and it < 100:
        x = 0.5 * (x + a / x)
        it += 1
    return x, it


def float32_accumulate(x):
    s = np.float32(0.0)
    for i in range(len(x)):
        s = s + x[i] * 0.1  # NumPy computes in float32: 0.1 is a weak Python float
    return s


def small_int_wraparound(a):
    total = np.int8(0)
    for i in range(len(a)):
        total = total + a[i] * 3
        a[i] = a[i] << 3
    return total, a


@pytest.mark.parametrize(
    "fn, make",
    [
        (crc16, lambda: (np.random.default_rng(0).integers(0, 256, 300, dtype=np.uint8), 0x8408)),
        (floyd_warshall, lambda: (np.random.default_rng(1).random((12, 12)),)),
        (insertion_sort, lambda: (np.random.default_rng(2).random(40),)),
        (insertion_sort, lambda: (np.random.default_rng(3).integers(-50, 50, 30).astype(np.int32),)),
        (forward_substitution, lambda: (np.tril(np.random.default_rng(4).random((9, 9))) + np.eye(9), np.arange(9.0))),
        (newton_sqrt, lambda: (np.float64(2.0),)),
        (float32_accumulate, lambda: (np.linspace(-1, 1, 17, dtype=np.float32),)),
        (small_int_wraparound, lambda: (np.arange(-60, 60, 7, dtype=np.int8),)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_element_loops_compile_and_match_eager(fn, make):
    compiled_like_eager(fn, *make())


@pytest.mark.parametrize("kernel", [k for k in BY_NAME.values() if MEDIUM in k.sizes], ids=lambda k: k.name)
def test_the_element_loop_benchmark_kernels_at_their_medium_size_give_eagers_bits(kernel):
    """The sizes ``benchmarks/compiled_tier.py --preset medium`` times (calls of 0.1-3 ms)."""
    compiled_like_eager(kernel.function, *kernel.make(MEDIUM))


# --- NumPy's semantics at the edges ------------------------------------------------------------------
def integer_edges(a, b):
    out = np.zeros((5, len(a)), dtype=a.dtype)
    for i in range(len(a)):
        out[0, i] = a[i] // b[i]
        out[1, i] = a[i] % b[i]
        out[2, i] = (a[i] >> b[i]) + (a[i] << b[i])
        out[3, i] = a[i] * b[i] + a[i] - b[i]  # wraps around
        out[4, i] = -a[i] + abs(a[i])
    return out


def float_edges(x, y):
    out = np.zeros(len(x))
    for i in range(len(x)):
        out[i] = np.maximum(x[i], y[i]) + x[i] / y[i] + np.fmod(x[i], y[i]) + (x[i] // y[i])
    return out


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64, np.uint64])
def test_integer_division_by_zero_and_wide_shifts_are_numpys(dtype):
    info = np.iinfo(dtype)
    a = np.array([7, info.max, info.min, 0, 5, 100, info.min, info.max], dtype=dtype)
    minus_one = -1 if info.min < 0 else info.max
    b = np.array([0, 3, 0, 0, 70, 65, minus_one, 2], dtype=dtype)  # shifts of 65 and 70 bits: 0
    compiled_like_eager(integer_edges, a, b)


def test_nan_inf_and_division_by_zero_in_floats_are_numpys():
    x = np.array([1.0, -1.0, 0.0, np.nan, np.inf, 3.5])
    y = np.array([0.0, 0.0, 0.0, 1.0, np.nan, -np.inf])
    compiled_like_eager(float_edges, x, y)


def python_int_division(x, d):
    total = 0
    for i in range(len(x)):
        total += i // d
    return total


def test_python_int_division_by_zero_raises_zero_division_error():
    static = dy2st.to_static(python_int_division, backend="compiled")
    with pytest.raises(ZeroDivisionError):
        static(np.zeros(3), 0)
    assert static(np.zeros(5), 2) == python_int_division(np.zeros(5), 2)


def read_past_the_end(x, n):
    s = 0.0
    for i in range(n):
        s += x[i]
    return s


def test_an_index_out_of_bounds_raises_index_error_naming_the_users_line():
    static = dy2st.to_static(read_past_the_end, backend="compiled")
    assert static(np.ones(4), 4) == 4.0
    with pytest.raises(IndexError) as raised:
        static(np.ones(4), 6)
    message = str(raised.value)
    assert "test_compiled_tier.py:" in message and "index out of bounds for axis 0" in message
    line = read_past_the_end.__code__.co_firstlineno + 3
    assert f"test_compiled_tier.py:{line}" in message


def negative_indices(x):
    s = 0.0
    for i in range(1, len(x) + 1):
        s = s * 2 + x[-i]
    return s


def test_negative_indices_count_from_the_end():
    compiled_like_eager(negative_indices, np.arange(6.0))
    static = dy2st.to_static(read_past_the_end, backend="compiled")
    with pytest.raises(IndexError):
        static(np.ones(3), 5)


def grows_beyond_int64(n):
    h = 2**60
    for i in range(n):
        h = h * 4
    return h


def test_a_python_int_beyond_64_bits_goes_back_to_the_numpy_tier_with_eagers_answer():
    static = dy2st.to_static(grows_beyond_int64, backend="compiled")
    assert static(np.array(1)) == 2**62  # fits: compiled
    assert executor_of(static, np.array(1)).tier == "compiled"
    assert static(np.array(5)) == 2**70  # beyond int64: run again on the NumPy tier
    executor = executor_of(static, np.array(5))
    assert executor.tier == "numpy" and "64 bits" in executor.failures[-1]


def storing_python_ints(a, v):
    for i in range(len(a)):
        a[i] = v + i
    return a


def test_a_python_int_out_of_range_for_the_array_raises_overflow_error_as_numpy_does():
    static = dy2st.to_static(storing_python_ints, backend="compiled")
    same_value(static(np.zeros(3, np.uint8), 250), storing_python_ints(np.zeros(3, np.uint8), 250))
    with pytest.raises(OverflowError):
        storing_python_ints(np.zeros(3, np.uint8), 254)
    with pytest.raises(OverflowError):
        static(np.zeros(3, np.uint8), 254)


# --- accuracy of math functions ----------------------------------------------------------------
def apply_elementwise(x, out, which):
    for i in range(len(x)):
        if which == 0:
            out[i] = np.tanh(x[i])
        elif which == 1:
            out[i] = np.exp(x[i])
        elif which == 2:
            out[i] = np.sin(x[i])
        elif which == 3:
            out[i] = np.log1p(np.abs(x[i]))
        else:
            out[i] = np.arctan2(x[i], 0.5)
    return out


def ulp_distance(a: np.ndarray, b: np.ndarray) -> int:
    """The largest distance in units in the last place between two float arrays (NaNs equal)."""
    kind = np.int32 if a.dtype == np.float32 else np.int64
    ai, bi = a.view(kind).astype(np.int64), b.view(kind).astype(np.int64)
    # Map the sign-magnitude bit patterns onto a monotonic integer line.
    magnitude = np.int64(2 ** (a.dtype.itemsize * 8 - 1) - 1)
    ai = np.where(ai < 0, -(ai & magnitude), ai)
    bi = np.where(bi < 0, -(bi & magnitude), bi)
    both_nan = np.isnan(a) & np.isnan(b)
    return int(np.max(np.where(both_nan, 0, np.abs(ai - bi))))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("which", range(5))
def test_math_functions_are_within_4_ulp_of_numpys(dtype, which):
    rng = np.random.default_rng(which)
    x = np.concatenate([rng.uniform(-20, 20, 4000), rng.uniform(-1e-3, 1e-3, 1000), [0.0, -0.0, 1e-30]]).astype(dtype)
    static = dy2st.to_static(apply_elementwise, backend="compiled")
    compiled = static(x, np.zeros_like(x), which)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        eager = apply_elementwise(x, np.zeros_like(x), which)
    assert compiled.dtype == eager.dtype == dtype
    assert ulp_distance(compiled, eager) <= 4
    assert executor_of(static, x, np.zeros_like(x), which).tier == "compiled"


# --- what the tier decides, and how calls run -----------------------------------------------------
def sum_of_row_slices(A):
    s = 0.0
    for i in range(A.shape[0]):
        s += A[i, :].sum()  # an array operation: the loop stays on the NumPy tier
    return s


def test_a_loop_with_array_operations_stays_on_the_numpy_tier_and_runs():
    static = dy2st.to_static(sum_of_row_slices, backend="compiled")
    A = np.arange(12.0).reshape(3, 4)
    assert static(A) == sum_of_row_slices(A)
    assert not any(op.attrs.get(COMPILED_LOOP) for op in static.graph(A).walk())


def test_a_strided_or_read_only_argument_runs_the_numpy_tiers_loop():
    static = dy2st.to_static(insertion_sort, backend="compiled")
    base = np.random.default_rng(5).random((2, 20))
    strided = base[0, ::2]
    expected = insertion_sort(strided.copy())
    same_value(static(strided), expected)
    assert np.array_equal(base[0, ::2], expected)  # the caller's view was sorted in place
    read_only = np.arange(5.0)[::-1].copy()
    read_only.flags.writeable = False
    with pytest.raises(ValueError):  # as eager raises for a write to a read-only array
        insertion_sort(read_only)
    with pytest.raises(ValueError):
        static(read_only)


def test_auto_starts_on_numpy_and_swaps_in_compiled_code_once_loops_ran_long_enough(monkeypatch):
    monkeypatch.setenv("DY2ST_COMPILE_AFTER_MS", "0")
    static = dy2st.to_static(crc16, backend="auto")
    data = np.random.default_rng(6).integers(0, 256, 200, dtype=np.uint8)
    expected = crc16(data, 0x8408)
    assert static(data, 0x8408) == expected
    executor = executor_of(static, data, 0x8408)
    assert isinstance(executor, TieredExecutor)
    assert executor.wait_compiled(timeout=120)
    assert "loop_" in executor.source  # the executor now calls the compiled loop
    for _ in range(3):
        assert static(data, 0x8408) == expected


def test_numpy_backend_never_compiles():
    static = dy2st.to_static(crc16, backend="numpy")
    data = np.arange(10, dtype=np.uint8)
    assert static(data, 0x8408) == crc16(data, 0x8408)
    assert not isinstance(executor_of(static, data, 0x8408), TieredExecutor)
    assert not any(op.attrs.get(COMPILED_LOOP) for op in static.graph(data, 0x8408).walk())


def test_the_backend_is_checked_when_the_function_is_converted(monkeypatch):
    with pytest.raises(ValueError, match="backend must be one of"):
        dy2st.to_static(crc16, backend="gpu")
    monkeypatch.setenv("DY2ST_BACKEND", "fast")
    with pytest.raises(ValueError, match="DY2ST_BACKEND"):
        dy2st.to_static(crc16)
    monkeypatch.setenv("DY2ST_BACKEND", "numpy")
    assert dy2st.to_static(crc16).backend == "numpy"


def test_every_compiled_ufunc_is_one_numba_implements():
    from numba.np.ufunc_db import get_ufuncs

    assert COMPILED_UFUNCS <= set(get_ufuncs())


# --- the disk cache ------------------------------------------------------------------------------
CACHED_PROGRAM = textwrap.dedent(
    """
    import sys
    import numpy as np
    import dy2st

    def crc(data):
        c = 0xFFFF
        for byte in data:
            c = ((c << 3) ^ byte) & 0xFFFF  # data is int64: Python int ^ int64
        return c

    static = dy2st.to_static(crc, backend="compiled")
    data = np.arange(50, dtype=np.int64)
    assert static(data) == crc(data)
    (entries,) = static._cache.values()
    (loop,) = entries[0].executor.loops.values()
    print(sum(loop.function.stats.cache_hits.values()))
    """
)


def test_a_second_process_loads_compiled_code_from_the_cache_folder(tmp_path):
    script = tmp_path / "program.py"
    script.write_text(CACHED_PROGRAM)
    env = {**os.environ, "DY2ST_CACHE_DIR": str(tmp_path / "cache")}
    first = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "0"  # compiled, not loaded
    written = list((tmp_path / "cache").rglob("*.py"))
    assert len(written) == 1 and list((tmp_path / "cache").rglob("*.nbi"))
    second = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    assert int(second.stdout.strip()) >= 1  # machine code loaded from the disk cache


WAIT_POLICY_PROGRAM = textwrap.dedent(
    """
    import os
    import numpy as np
    import dy2st

    def chain(x):
        return (x * 1.5 + 2.0) * x - 0.5

    x = np.ones(1 << 17, np.float32)
    assert np.array_equal(dy2st.to_static(chain, backend="compiled")(x), chain(x))
    print(os.environ.get("OMP_WAIT_POLICY"))
    """
)


@pytest.mark.parametrize("given, kept", [(None, "passive"), ("active", "active")])
def test_parallel_loops_let_idle_threads_sleep_unless_the_environment_says(tmp_path, given, kept):
    """OpenMP's spinning threads made parallel kernels wait milliseconds on a busy machine."""
    script = tmp_path / "program.py"
    script.write_text(WAIT_POLICY_PROGRAM)
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    env["DY2ST_CACHE_DIR"] = str(tmp_path / "cache")
    if given is not None:
        env["OMP_WAIT_POLICY"] = given
    run = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == kept


SUMMING_PROGRAM = textwrap.dedent(
    """
    import numpy as np
    import dy2st

    def row_sums(A, out):
        for i in range(A.shape[0]):
            out[i] = A[i, :].sum() + A[i, :].mean()
        return out

    static = dy2st.to_static(row_sums, backend="compiled")
    A = np.random.default_rng(0).random((20, 300))
    assert np.array_equal(static(A, np.zeros(20)), row_sums(A, np.zeros(20)))
    (entries,) = static._cache.values()
    (loop,) = entries[0].executor.loops.values()
    print(sum(loop.function.stats.cache_hits.values()))
    """
)


def test_a_sum_loaded_from_the_cache_folder_runs(tmp_path):
    # Numba's disk cache crashed (SIGSEGV) on a cached function calling a recursive one: the
    # pairwise summation walks its tree with a stack of its own instead.
    script = tmp_path / "program.py"
    script.write_text(SUMMING_PROGRAM)
    env = {**os.environ, "DY2ST_CACHE_DIR": str(tmp_path / "cache")}
    for expected_hits in (0, 1):
        run = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
        assert (int(run.stdout.strip()) >= 1) == bool(expected_hits)


# --- what dy2st dump shows -------------------------------------------------------------------------
def test_dump_shows_the_compiled_regions_pass_and_the_numba_source(tmp_path, capsys):
    from dy2st.cli import main

    source = tmp_path / "kernel.py"
    source.write_text(
        textwrap.dedent(
            """
            def prefix(x):
                for i in range(1, len(x)):
                    x[i] = x[i] + x[i - 1]
                return x
            """
        )
    )
    assert main(["dump", f"{source}::prefix", "--compiled", "--after", "compiled-regions", "--arg", "x=f64[8]"]) == 0
    out = capsys.readouterr().out
    assert "compiled_loop=True" in out
    assert "@numba.njit" in out and "def loop_0(" in out
    assert "raise IndexError('index out of bounds for axis 0 in getitem" in out and "(kernel.py:4)" in out
    assert main(["dump", f"{source}::prefix", "--compiled", "--arg", "x=f64[8]"]) == 0
    assert "def loop_0(" in capsys.readouterr().out


def test_compiled_source_says_why_nothing_is_compiled():
    static = dy2st.to_static(sum_of_row_slices)
    assert "nothing is compiled" in static.compiled_source(np.ones((2, 3)))
    assert "backend='numpy'" in dy2st.to_static(crc16, backend="numpy").compiled_source(np.zeros(3, np.uint8), 1)


# --- fused elementwise groups -------------------------------------------------------------------
def affine_chain(a, b, c):
    return (a * b + c - a / 3.0) * 0.5 + np.maximum(a, c)


def int8_chain(a, b):
    return (a * b + a - b) * 3 + (a >> 2)


def kernels_of(static, *args):
    executor = executor_of(static, *args)
    assert isinstance(executor, TieredExecutor) and executor.tier == "compiled", getattr(executor, "failures", None)
    return executor.kernels


# Sizes above the NumPy tier's "small group" bound (16 KiB), which runs small groups op by op.
@pytest.mark.parametrize("size", [5000, 70_000])  # the serial and the parallel loop
def test_an_arithmetic_fused_group_compiles_to_one_loop_with_numpys_bits(size):
    rng = np.random.default_rng(size)
    a, b, c = (rng.standard_normal(size).astype(np.float32) for _ in range(3))
    a[:3] = [np.nan, np.inf, -0.0]
    static = dy2st.to_static(affine_chain, backend="compiled")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy warns of inf - inf; compiled code does not
        same_value(static(a, b, c), affine_chain(a, b, c))  # bit for bit: the same IEEE operations
    assert len(kernels_of(static, a, b, c)) == 1


def test_integer_fused_groups_wrap_around_as_numpy():
    rng = np.random.default_rng(1)
    a, b = (rng.integers(-128, 128, 40_000).astype(np.int8) for _ in range(2))
    static = dy2st.to_static(int8_chain, backend="compiled")
    same_value(static(a, b), int8_chain(a, b))
    assert len(kernels_of(static, a, b)) == 1


def test_fused_kernels_give_broadcast_and_strided_inputs_to_the_numpy_tier():
    rng = np.random.default_rng(2)
    a, b, c = (rng.standard_normal((60, 50)) for _ in range(3))
    static = dy2st.to_static(affine_chain, backend="compiled")
    same_value(static(a, b, c), affine_chain(a, b, c))
    assert len(kernels_of(static, a, b, c)) == 1
    strided = rng.standard_normal((60, 100))[:, ::2]
    same_value(static(strided, b, c), affine_chain(strided, b, c))
    row = dy2st.to_static(affine_chain, backend="compiled")
    same_value(row(a, b[0], c), affine_chain(a, b[0], c))  # b broadcasts: not compiled, still right


def test_a_fused_group_with_library_math_functions_stays_on_numpys_vectorized_loops():
    # Numba would call the C library's log per element; tanh and exp, ours, compile (test_vector_math.py).
    static = dy2st.to_static(lambda x: 0.5 * x * (1.0 + np.log(x * 0.8 + 4.0)), backend="compiled")
    x = np.linspace(-3, 3, 20000, dtype=np.float32)
    static(x)
    assert not any(op.attrs.get("compiled_kernel") for op in static.graph(x).walk())


# --- loops with array operations ----------------------------------------------------------------
def jacobi_1d(steps, A, B):
    for t in range(steps):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])
    return A, B


def shifted_copy(x, steps):
    for t in range(steps):
        x[1:] = x[:-1]  # overlapping: NumPy reads the whole value first
    return x


@pytest.mark.parametrize(
    "fn, make",
    [
        (syrk_rows, lambda rng: (1.5, 1.2, rng.random((12, 12)), rng.random((12, 9)))),
        (
            syrk_rows,
            lambda rng: (1.5, 1.2, rng.random((10, 10)).astype(np.float32), rng.random((10, 7)).astype(np.float32)),
        ),
        (jacobi_1d, lambda rng: (6, rng.random(30), rng.random(30))),
        (shifted_copy, lambda rng: (np.arange(10.0), 6)),
    ],
    ids=["syrk", "syrk-float32", "jacobi_1d", "overlapping-copy"],
)
def test_loops_over_slices_and_vector_arithmetic_compile_with_numpys_bits(fn, make):
    compiled_like_eager(fn, *make(np.random.default_rng(7)))


def rows_with_a_math_function(A):
    for i in range(1, A.shape[0]):
        A[i, :] = np.tanh(A[i - 1, :]) * 0.5 + 0.1
    return A


def test_a_loop_with_a_math_function_on_small_arrays_compiles_each_step_within_4_ulp():
    # The contract for math functions on arrays is the one on scalars: each result within 4 ulp of
    # NumPy's. A recurrence carries the differences on: here at most 2 ulp after six rows.
    static = dy2st.to_static(rows_with_a_math_function, backend="compiled")
    A = np.random.default_rng(8).random((6, 5))
    compiled, eager = static(A.copy()), rows_with_a_math_function(A.copy())
    assert executor_of(static, A.copy()).tier == "compiled"
    assert ulp_distance(compiled, eager) <= 4
    for i in range(1, A.shape[0]):  # each step from the compiled row before it: one tanh's error
        assert ulp_distance(compiled[i], np.tanh(compiled[i - 1]) * 0.5 + 0.1) <= 4


def test_a_loop_with_a_math_function_on_larger_arrays_stays_on_numpys_simd_loops():
    # Our vectorized tanh is near NumPy's speed, not at it: beyond SMALL_OWN_MATH_ELEMENTS the NumPy
    # tier wins (test_vector_math.py has the C library's functions and SMALL_MATH_ELEMENTS).
    static = dy2st.to_static(rows_with_a_math_function, backend="compiled")
    A = np.random.default_rng(8).random((6, 1000))
    same_value(static(A.copy()), rows_with_a_math_function(A.copy()))
    assert not isinstance(executor_of(static, A.copy()), TieredExecutor)


def dot_then_scale(A, v, n):
    for _ in range(n):
        v = np.dot(A, v) * 0.5
    return v


def linear_rnn_steps(xs, h, WX, WH, b):
    for i in range(xs.shape[0]):
        h = (xs[i] @ WX + h @ WH + b) * 0.5
    return h


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_recurrent_step_with_matmul_compiles_within_the_error_bound_of_numpys_sums(dtype):
    # Small products are loops summing in the natural order, not BLAS: within the error bound of
    # NumPy's sums (tests/backend/test_compiled_products.py checks each product against it).
    rng = np.random.default_rng(9)
    WX, WH = (rng.standard_normal((8, 8)).astype(dtype) * 0.3 for _ in range(2))
    args = (
        rng.standard_normal((30, 8)).astype(dtype),
        np.zeros(8, dtype),
        WX,
        WH,
        rng.standard_normal(8).astype(dtype),
    )
    static = dy2st.to_static(linear_rnn_steps, backend="compiled")
    np.testing.assert_allclose(static(*args), linear_rnn_steps(*args), rtol=1e-13 if dtype == np.float64 else 1e-5)
    executor = executor_of(static, *args)
    assert isinstance(executor, TieredExecutor) and executor.tier == "compiled", executor.failures


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dot_products_of_vectors_compile_with_numpys_bits(dtype):
    M = np.random.default_rng(12).random((40, 40))
    A = (M @ M.T + 40 * np.eye(40)).astype(dtype)
    compiled_like_eager(cholesky, A)  # A[i, :j] @ A[j, :j]: products of rows


def test_small_matrix_vector_products_compile_as_loops():
    A, v = np.random.default_rng(10).random((5, 5)), np.arange(5.0)
    static = dy2st.to_static(dot_then_scale, backend="compiled")
    np.testing.assert_allclose(static(A, v, np.array(6)), dot_then_scale(A, v, np.array(6)), rtol=1e-14)
    same_value(static(A, v, np.array(0)), v)
    executor = executor_of(static, A, v, np.array(3))
    assert isinstance(executor, TieredExecutor) and executor.tier == "compiled", executor.failures
    assert "np.dot(" not in static.compiled_source(A, v, np.array(3))


def outer_product_sums(u, V, acc):
    for i in range(V.shape[0]):
        acc = acc + np.expand_dims(u, 1) * np.expand_dims(V[i], 0)
    return acc


def outer_product_sums_of_columns(u, V, acc):
    for i in range(V.shape[1]):
        acc = acc + np.expand_dims(u, 1) * np.expand_dims(V[:, i], 0)
    return acc


def test_outer_products_of_expanded_vectors_compile_with_numpys_bits():
    """``np.expand_dims`` of a contiguous vector is a reshaped view in compiled code (the weight
    gradients of a backward loop); of a column, which Numba cannot reshape, the loop stays on
    NumPy."""
    rng = np.random.default_rng(15)
    u, V = rng.random(6), rng.random((9, 6))
    static = dy2st.to_static(outer_product_sums, backend="compiled")
    same_value(static(u, V, np.zeros((6, 6))), outer_product_sums(u, V, np.zeros((6, 6))))
    executor = executor_of(static, u, V, np.zeros((6, 6)))
    assert isinstance(executor, TieredExecutor) and executor.tier == "compiled", executor.failures
    assert ".reshape((" in static.compiled_source(u, V, np.zeros((6, 6)))
    columns = dy2st.to_static(outer_product_sums_of_columns, backend="compiled")
    W = rng.random((6, 9))
    same_value(columns(u, W, np.zeros((6, 6))), outer_product_sums_of_columns(u, W, np.zeros((6, 6))))
    assert not any(op.attrs.get(COMPILED_LOOP) for op in columns.graph(u, W, np.zeros((6, 6))).walk())


def test_calls_from_threads_while_compiled_code_is_swapped_in_all_give_eagers_result(monkeypatch):
    import threading

    monkeypatch.setenv("DY2ST_COMPILE_AFTER_MS", "0")
    static = dy2st.to_static(insertion_sort, backend="auto")
    data = np.random.default_rng(9).random(300)
    expected = insertion_sort(data.copy())
    failures: list[str] = []

    def caller() -> None:
        for _ in range(30):
            result = static(data.copy())
            if not np.array_equal(result, expected):
                failures.append("differs")

    threads = [threading.Thread(target=caller) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    executor = executor_of(static, data.copy())
    assert executor.wait_compiled(timeout=120)
    assert np.array_equal(static(data.copy()), expected)


def signed_zero_edges(x, y, out):
    for i in range(len(x)):
        out[0, i] = np.maximum(x[i], y[i])
        out[1, i] = np.minimum(x[i], y[i])
        out[2, i] = np.fmax(x[i], y[i])
        out[3, i] = np.fmin(x[i], y[i])
        out[4, i] = np.sign(x[i])
    return out


def integer_remainders(a, b, out):
    for i in range(len(a)):
        out[0, i] = np.fmod(a[i], b[i])
        out[1, i] = np.sign(a[i])
    return out


def test_signed_zeros_and_nans_in_maximum_minimum_and_sign_are_numpys():
    x = np.array([0.0, -0.0, np.nan, 1.0, -0.0, 2.0])
    y = np.array([-0.0, 0.0, 1.0, np.nan, -0.0, 2.0])
    compiled_like_eager(signed_zero_edges, x, y, np.zeros((5, 6)))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int64])
def test_integer_fmod_and_sign_are_numpys(dtype):
    a = np.array([-1, -7, 7, 0, 100, -100], dtype=np.int64).astype(dtype)
    b = np.array([127, -128, -3, 5, 7, 0], dtype=np.int64).astype(dtype)
    compiled_like_eager(integer_remainders, a, b, np.zeros((2, 6), dtype=dtype))


def narrowing_store(A, b):
    for i in range(len(b)):
        A[0, 1] -= b[2]
    return A


def test_storing_a_wider_integer_stays_on_numpy_which_refuses_an_out_of_range_value():
    A = np.array([[4, 6], [3, 6]], dtype=np.int8)
    b = np.array([0, 173, 164], dtype=np.uint8)
    assert_like_eager(narrowing_store, A, b, converted=dy2st.to_static(narrowing_store, backend="compiled"))


def fill_past_the_end(x, n):
    for i in range(n):
        x[i] = i * 2.0  # the checks made before the loop fail: it runs checked, writes, then raises
    return x


def test_a_loop_whose_indices_leave_the_array_writes_what_eager_wrote_before_raising():
    static = dy2st.to_static(fill_past_the_end, backend="compiled")
    assert_like_eager(fill_past_the_end, np.zeros(4), np.array(3), converted=static)
    assert_like_eager(fill_past_the_end, np.zeros(4), np.array(6), converted=static)  # IndexError at i == 4
    assert executor_of(static, np.zeros(4), np.array(3)).tier == "compiled"


def test_a_read_only_input_of_a_fused_group_runs_the_numpy_tiles_without_compiling_again():
    rng = np.random.default_rng(10)
    a, b, c = (rng.standard_normal(6000) for _ in range(3))
    static = dy2st.to_static(affine_chain, backend="compiled")
    (kernel,) = kernels_of(static, a, b, c).values()
    compiled_before = (list(kernel.serial.signatures), list(kernel.parallel.signatures))
    read_only = a.copy()
    read_only.flags.writeable = False
    same_value(static(read_only, b, c), affine_chain(read_only, b, c))
    assert (list(kernel.serial.signatures), list(kernel.parallel.signatures)) == compiled_before


# --- sums and means of vectors inside compiled loops ----------------------------------------------
def row_norms_plus_means(A, out):
    for i in range(A.shape[0]):
        r = A[i, :]
        out[i] = np.sqrt((r * r).sum()) + r.mean()
    return out


def centre_columns(A):
    for j in range(A.shape[1]):
        c = A[:, j]
        A[:, j] = c - c.mean()
    return A


def running_sums_of_prefixes(x, out):
    for i in range(len(x) + 1):
        out[i] = x[:i].sum() + x[:i].mean() * 0.0 if i > 0 else x[:i].sum()
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("rows, cols", [(6, 5), (40, 129), (300, 7)])
def test_vector_sums_and_means_compile_with_numpys_pairwise_bits(dtype, rows, cols):
    A = (np.random.default_rng(rows).standard_normal((rows, cols)) * 100).astype(dtype)
    for fn, args in [(row_norms_plus_means, (A, np.zeros(rows, dtype))), (centre_columns, (A,))]:
        static = dy2st.to_static(fn, backend="compiled")
        same_value(static(*copy_all(args)), fn(*copy_all(args)))
        executor = executor_of(static, *copy_all(args))
        assert isinstance(executor, TieredExecutor) and executor.tier == "compiled", executor.failures
        assert "_numpy_sum(" in static.compiled_source(*args) or "_numpy_mean(" in static.compiled_source(*args)


def test_sums_of_prefixes_include_the_empty_one():
    x = np.random.default_rng(3).random(300)
    compiled_like_eager(running_sums_of_prefixes, x, np.zeros(301))


def copy_all(args):
    return tuple(a.copy() for a in args)


# --- Python ints bounded by sizes and counters ------------------------------------------------------
def triangular_solve_in_place(L, b):
    n = len(b)
    for i in range(n):
        for j in range(i):
            b[i] -= L[i, j] * b[j]
        for j in range(i + 1, n):  # counts n - (i + 1) steps: a difference of a size and a counter
            L[i, j] = L[i, j] * 1.0
        b[i] /= L[i, i]
    return b


def doubling_in_place(x, n):
    h = 1
    for i in range(n):
        h = h + h  # a sum of two unbounded ints: may outgrow 64 bits
        x[i % len(x)] = h % 7
    return x


def test_loops_counting_between_sizes_and_counters_compile_in_functions_updating_arguments():
    rng = np.random.default_rng(11)
    L = np.tril(rng.random((12, 12))) + 12 * np.eye(12)
    compiled_like_eager(triangular_solve_in_place, L, rng.random(12))


def test_a_python_int_that_may_outgrow_64_bits_keeps_a_loop_updating_an_argument_on_numpy():
    static = dy2st.to_static(doubling_in_place, backend="compiled")
    x = np.zeros(5)
    same_value(static(x.copy(), 100), doubling_in_place(x.copy(), 100))
    assert not isinstance(executor_of(static, x.copy(), 100), TieredExecutor)


def reversed_prefix_sums(x, out):
    for k in range(1, len(x)):
        out[k] = x[:k][::-1].sum()  # a view of a view: the generated code names the inner one once
    return out


def durbin_like(r, y):
    for k in range(1, len(r)):
        y[k] = r[:k][::-1] @ y[:k]  # a reversed vector: NumPy sums it in a plain loop, not BLAS
    return y


def column_products(A, out):
    for j in range(A.shape[1]):
        out[j] = A[:, j] @ A[:, 0]  # columns: NumPy sums them with BLAS's strided routine
    return out


def test_a_view_of_a_view_compiles():
    x = np.random.default_rng(13).random(200)
    compiled_like_eager(reversed_prefix_sums, x, np.zeros(200))


def test_products_of_strided_vectors_compile_as_loops_within_the_error_bound():
    # NumPy's own sums of strided vectors differ from np.dot's (which copies them): written out,
    # summed in the natural order. Each result within the bound of the sum: gamma_k * sum |terms|.
    rng = np.random.default_rng(14)
    r, y = rng.standard_normal(150), np.ones(150)
    static = dy2st.to_static(durbin_like, backend="compiled")
    actual, eager = static(r.copy(), y.copy()), durbin_like(r.copy(), y.copy())
    assert isinstance(executor_of(static, r.copy(), y.copy()), TieredExecutor)
    for k in range(1, 150):  # each step from the compiled values before it
        terms = np.abs(r[:k][::-1] * actual[:k])
        gamma = k * 2.0**-53 / (1 - k * 2.0**-53)
        assert abs(actual[k] - r[:k][::-1] @ actual[:k]) <= 2 * gamma * terms.sum()
    np.testing.assert_allclose(actual, eager, rtol=1e-10)
    A = rng.standard_normal((30, 6))
    compiled = dy2st.to_static(column_products, backend="compiled")
    assert "np.dot(" not in compiled.compiled_source(A, np.zeros(6))
    np.testing.assert_allclose(compiled(A, np.zeros(6)), column_products(A, np.zeros(6)), rtol=1e-13)


def python_truth_tests(x, out):
    t = 0.0
    for i in range(len(x)):
        out[i] = x[i] if i else -1.0  # `if i:` of the counter, a Python int
        if t:  # a Python float: NaN is true, -0.0 false
            out[i] += 1.0
        t = -0.0 if i == 2 else (float("nan") if i == 5 else t + 0.5)
    return out


def test_if_of_a_python_number_compiles_with_pythons_truth():
    compiled_like_eager(python_truth_tests, np.arange(12.0), np.zeros(12))


# --- the machine code's entries -------------------------------------------------------------------
def test_machine_entry_skips_the_dispatcher_and_its_checked_form_refuses_what_it_was_not_compiled_for():
    import numba

    from dy2st.backend.numba.kernel_cache import machine_entry, numba_type

    @numba.njit
    def first_plus(x, k):
        return x[0] + k

    signature = (numba_type(np.dtype(np.float64), 1), numba_type(np.dtype(np.int64), 0))
    first_plus.compile(signature)
    first_plus.compile((numba_type(np.dtype(np.int32), 1), numba_type(np.dtype(np.int64), 0)))
    entry = machine_entry(first_plus, signature)
    assert entry(np.array([1.5, 2.0]), 2) == 3.5
    checked = machine_entry(first_plus, signature, checked=True)
    assert checked(np.array([1.5, 2.0]), np.int64(2)) == 3.5
    with pytest.raises(AssertionError, match="argument 0 is array\\(int32"):
        checked(np.array([1, 2], np.int32), 2)
    with pytest.raises(AssertionError, match="argument 0 is array\\(float64, 1d, A"):
        checked(np.arange(4.0)[::2], 2)
    with pytest.raises(AssertionError, match="argument 1 is 2.5"):
        checked(np.array([1.5]), 2.5)


# --- updates whose value a fused group computes into the updated part --------------------------
def shifted_row_update(C, A):
    n, m = A.shape
    for i in range(1, n):
        for k in range(m):
            C[i, 1 : i + 1] += C[i, :i] * A[i, k]  # reads another part of C's row: a temporary first
    return C


@pytest.mark.parametrize("fn", [syr2k, shifted_row_update], ids=lambda f: f.__name__)
def test_an_update_inside_a_compiled_loop_is_computed_into_the_part_it_stores(fn):
    """``C[i, :i + 1] += ...`` (syr2k): the fused group's element loop writes each element of the
    row's part where it computes it: no buffer, no copy. Where the group reads another part of
    the row (``C[i, 1:i + 1] += C[i, :i] * a``), the value is made first, as NumPy makes it."""
    rng = np.random.default_rng(8)
    A, B, C = rng.random((9, 7)), rng.random((9, 7)), rng.random((9, 9))
    args = (1.5, 1.2, C, A, B) if fn is syr2k else (C, A)
    compiled_like_eager(fn, *args)
    if fn is syr2k:
        source = dy2st.to_static(fn, backend="compiled").compiled_source(1.5, 1.2, C.copy(), A, B)
        assert "np.empty(" not in source and "] = v" in source, source
