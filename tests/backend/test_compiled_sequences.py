"""Compiled loops that follow one another run in one function (``compiled_sequence``): one call and
one set of argument checks instead of one per loop. What the caller sees must not change: values,
the final state of every argument, which array object comes back, errors naming the user's line,
the NumPy tier's loops for a strided argument, and going back to the NumPy tier for a Python int
beyond 64 bits."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

import dy2st
from dy2st.backend.numba.support import COMPILED_SEQUENCE
from dy2st.ir.opcodes import WHILE_LOOP
from eager_parity import assert_like_eager

pytest.importorskip("numba")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "benchmarks"))
from kernels.element_loops import edit_distance_elements as edit_distance  # noqa: E402


def scale_then_prefix(x, y, scale):
    total = 0.0
    for i in range(x.shape[0]):
        x[i] = x[i] * scale
    for i in range(y.shape[0]):
        total += y[i]
        y[i] = total
    return x, y, total


def reads_past_the_end_in_the_second_loop(x):
    s = 0.0
    for i in range(x.shape[0]):
        x[i] += 1.0
    for i in range(x.shape[0]):
        s += x[i + 1]
    return s


def int_grows_in_the_second_loop(x):
    total = 0
    for i in range(x.shape[0]):
        total += x[i]
    h = 1
    for i in range(x.shape[0] * 8):
        h = h * 2
    return total, h


def sequences(static, *args):
    """The compiled loops of the graph's body, by their sequence number."""
    found: dict[int, list] = {}
    for op in static.graph(*args).body.ops:
        if op.name == WHILE_LOOP and COMPILED_SEQUENCE in op.attrs:
            found.setdefault(op.attrs[COMPILED_SEQUENCE], []).append(op)
    return list(found.values())


def executor_of(static, *args):
    try:
        static(*args)
    except IndexError:
        pass  # the graph is built, its loops compiled
    (compiled,) = [c for entries in static._cache.values() for c in entries]
    return compiled.executor


def test_three_loops_of_a_table_run_as_one_function_with_eagers_answer():
    static = dy2st.to_static(edit_distance, backend="compiled")
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 4, 9).astype(np.int8), rng.integers(0, 4, 7).astype(np.int8)
    assert_like_eager(edit_distance, a, b, converted=static)
    (run,) = sequences(static, a, b)
    assert len(run) == 3
    executor = executor_of(static, a, b)
    assert executor.tier == "compiled"
    assert len({id(loop) for loop in executor.loops.values()}) == 1  # one function for the three
    assert executor.compiled_source.count("@numba.njit") == 1
    assert executor.code.source.count("flags.carray") == 3  # D, a and b, each checked once


def test_arguments_updated_by_two_loops_keep_their_identity_and_final_state():
    static = dy2st.to_static(scale_then_prefix, backend="compiled")
    x, y = np.arange(5.0), np.arange(6.0)
    eager_x, eager_y = x.copy(), y.copy()
    expected = scale_then_prefix(eager_x, eager_y, 2.0)
    result = static(x, y, 2.0)
    assert result[0] is x and result[1] is y
    np.testing.assert_array_equal(x, eager_x)
    np.testing.assert_array_equal(y, eager_y)
    assert result[2] == expected[2] and type(result[2]) is type(expected[2])
    assert [len(run) for run in sequences(static, x, y, 2.0)] == [2]


def test_a_strided_argument_runs_every_loop_of_the_sequence_on_the_numpy_tier():
    static = dy2st.to_static(scale_then_prefix, backend="compiled")
    static(np.arange(5.0), np.arange(6.0), 2.0)
    base_x, base_y = np.arange(10.0), np.arange(6.0)
    eager_x, eager_y = base_x.copy(), base_y.copy()
    expected = scale_then_prefix(eager_x[::2], eager_y, 2.0)
    result = static(base_x[::2], base_y, 2.0)
    np.testing.assert_array_equal(base_x, eager_x)
    np.testing.assert_array_equal(base_y, eager_y)
    assert result[2] == expected[2]
    assert np.shares_memory(result[0], base_x) and result[1] is base_y


def test_an_index_error_in_the_second_loop_names_its_line_after_the_first_loop_ran():
    static = dy2st.to_static(reads_past_the_end_in_the_second_loop, backend="compiled")
    assert [len(run) for run in sequences(static, np.zeros(8))] == [2]
    x = np.zeros(8)
    with pytest.raises(IndexError) as info:
        static(x)
    assert "test_compiled_sequences.py" in str(info.value) and "s += x[i + 1]" in str(info.value)
    assert executor_of(static, np.zeros(8)).tier == "compiled"
    eager = np.zeros(8)
    with pytest.raises(IndexError):
        reads_past_the_end_in_the_second_loop(eager)
    np.testing.assert_array_equal(x, eager)  # the first loop's updates stay, as in eager code


@pytest.mark.parametrize("n", [5, 8])
def test_a_python_int_beyond_64_bits_in_the_second_loop_gives_eagers_int(n):
    """2**40 fits in 64 bits; 2**64 does not: the call runs again on the NumPy tier."""
    static = dy2st.to_static(int_grows_in_the_second_loop, backend="compiled")
    x = np.arange(n)
    assert [len(run) for run in sequences(static, x)] == [2]
    result = static(x)
    assert result == int_grows_in_the_second_loop(x) and type(result[1]) is int
    assert executor_of(static, x).tier == ("compiled" if n == 5 else "numpy")


def test_dump_passes_shows_the_sequence_number():
    from dy2st.ir.printer import print_graph

    static = dy2st.to_static(scale_then_prefix, backend="compiled")
    graph = static.graph(np.arange(5.0), np.arange(6.0), 2.0)
    assert print_graph(graph).count("compiled_sequence=0") == 2
