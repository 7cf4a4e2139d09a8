"""Every foundation error names the user's file and line, shows the line, and says what is wrong.

Each test checks the error class, the location (file, line, column), and the exact rendered text:
``file:line:col: error: message``, the source line, a caret under the column, and the note.
"""

from __future__ import annotations

import inspect
import os

import numpy as np
import pytest

import dy2st
from dy2st.errors import SourceLocation

THIS_FILE = os.path.abspath(__file__)


def line_of(fn, snippet: str) -> int:
    """The file line number of the first line of ``fn`` containing ``snippet``."""
    lines, start = inspect.getsourcelines(fn)
    for offset, line in enumerate(lines):
        if snippet in line:
            return start + offset
    raise AssertionError(f"{snippet!r} not in {fn.__name__}")


def raised(fn, *args):
    with pytest.raises(dy2st.Dy2stError) as info:
        dy2st.to_static(fn)(*args)
    return info.value


def rendered(loc: SourceLocation, message: str, note: str | None) -> str:
    """The text every dy2st error has: location, message, source line, caret, note."""
    line = loc.source_line()
    text = f"{loc}: error: {message}\n    {line}"
    if loc.col is not None:
        text += "\n    " + " " * loc.col + "^"
    return text + (f"\nnote: {note}" if note else "")


def check_error(error, cls, fn, snippet: str, column_text: str, message: str, note: str | None):
    """The error is ``cls`` (or ``cls`` combined with the class eager NumPy raises, such as
    ``GraphBuildError[ValueError]``) at the line of ``fn`` holding ``snippet``, column of ``column_text``."""
    assert type(error) is cls or type(error).__mro__[1] is cls
    assert os.path.abspath(error.loc.filename) == THIS_FILE
    lineno = line_of(fn, snippet)
    assert error.loc.lineno == lineno
    source_line = error.loc.source_line()
    assert error.loc.col == source_line.index(column_text)
    assert error.message == message
    assert error.note == note
    assert str(error) == rendered(error.loc, message, note)
    assert str(error).startswith(f"{os.path.relpath(THIS_FILE)}:{lineno}:{error.loc.col + 1}: error: ")


# --- TensorValueError ------------------------------------------------------------------------
def python_bool_of_a_tensor(x):
    total = x.sum()
    flag = all([total > 0])
    return x * flag


def python_index_of_a_tensor(x):
    weights = [1.0, 2.0, 3.0]
    return x * weights[x.argmax()]


def test_bool_of_a_tensor():
    error = raised(python_bool_of_a_tensor, np.ones(3))
    check_error(
        error,
        dy2st.TensorValueError,
        python_bool_of_a_tensor,
        "flag = all(",
        "all(",
        "the tensor bool[] is used as a Python bool, but its value is only known when the graph runs",
        "use it as the condition of an if/while/assert/and/or/not that dy2st converts, or np.where",
    )
    assert isinstance(error, dy2st.GraphBuildError)


def test_python_index_of_a_tensor():
    error = raised(python_index_of_a_tensor, np.ones(3, np.float32))
    check_error(
        error,
        dy2st.TensorValueError,
        python_index_of_a_tensor,
        "weights[x.argmax()]",
        "weights[",
        "the tensor i64[] is used as a Python index, but its value is only known when the graph runs",
        "index with the tensor itself (t[i]) or use a Python int",
    )


# --- UnsupportedOpError ----------------------------------------------------------------------
def unsupported_function(x):
    y = x + 1
    return np.array2string(y)


def test_unsupported_numpy_function():
    error = raised(unsupported_function, np.ones(3))
    check_error(
        error,
        dy2st.UnsupportedOpError,
        unsupported_function,
        "np.array2string",
        "np.array2string",
        "np.array2string returns a Python str here, which is neither an array nor a number: a converted "
        "function cannot hold it in its graph",
        "call it outside the function, or on values known when the function is converted",
    )


# --- GraphBuildError -------------------------------------------------------------------------
def shape_mismatch(x, y):
    z = x * 2
    return z + y


def test_shape_mismatch():
    error = raised(shape_mismatch, np.ones(3), np.ones(4))
    check_error(
        error,
        dy2st.GraphBuildError,
        shape_mismatch,
        "return z + y",
        "z + y",
        "add(f64[3], f64[4]): shape mismatch: objects cannot be broadcast to a single shape.  "
        "Mismatch is between arg 0 with shape (3,) and arg 1 with shape (4,).",
        None,
    )


def helper_with_a_mismatch(a, b):
    return a @ b


def calls_the_helper(x, y):
    return helper_with_a_mismatch(x, y) + 1


def test_error_in_a_converted_helper_names_the_helpers_line():
    error = raised(calls_the_helper, np.ones((2, 3)), np.ones((4, 5)))
    assert isinstance(error, dy2st.GraphBuildError) and isinstance(error, ValueError)  # as eager np.matmul
    assert error.loc.lineno == line_of(helper_with_a_mismatch, "return a @ b")
    assert error.message.startswith("matmul(f64[2,3], f64[4,5]): ")


# --- conversion errors -----------------------------------------------------------------------
def generator(x):
    for row in x:
        yield row * 2


def test_yield_is_unsupported_syntax():
    error = raised(generator, np.ones((2, 2)))
    check_error(
        error,
        dy2st.UnsupportedSyntaxError,
        generator,
        "yield row",
        "yield",
        "'yield' (generator functions) cannot be converted",
        None,
    )
    assert isinstance(error, dy2st.ConversionError)


def test_yield_is_reported_when_the_code_is_asked_for():
    with pytest.raises(dy2st.UnsupportedSyntaxError, match="'yield'"):
        dy2st.to_static(generator).code


def test_missing_source_is_a_conversion_error():
    namespace: dict = {}
    exec(compile("def made_by_exec(x):\n    return x + 1\n", "<generated>", "exec"), namespace)
    with pytest.raises(dy2st.ConversionError) as info:
        dy2st.to_static(namespace["made_by_exec"])(np.ones(2))
    error = info.value
    assert type(error) is dy2st.ConversionError
    assert error.message == "cannot read the source of 'made_by_exec': could not get source code"
    assert error.note == "dy2st converts functions defined in files (not in an interactive session or by exec)"
    assert (error.loc.filename, error.loc.lineno) == ("<generated>", 1)
    assert str(error) == (
        "<generated>:1: error: cannot read the source of 'made_by_exec': could not get source code\n"
        "note: dy2st converts functions defined in files (not in an interactive session or by exec)"
    )


def test_fallback_runs_unsupported_syntax_eagerly_with_a_warning():
    def generator_caller(x):
        return np.stack(list(generator(x)))

    static = dy2st.to_static(generator_caller, fallback=True)
    x = np.ones((2, 2))
    with pytest.warns(UserWarning, match=r"dy2st: running \S*generator_caller eagerly \(fallback=True\): .*'yield'"):
        result = static(x)
    np.testing.assert_array_equal(result, generator_caller(x))


# --- errors while the graph runs -------------------------------------------------------------
def index_out_of_bounds(x, i):
    y = x * 2
    return y[i]


def test_runtime_error_names_the_op_and_the_users_line():
    static = dy2st.to_static(index_out_of_bounds)
    static(np.ones(3), np.array(1))  # builds and runs fine
    with pytest.raises(dy2st.Dy2stRuntimeError) as info:
        static(np.ones(3), np.array(5))  # same graph, a value NumPy rejects at run time
    error = info.value
    lineno = line_of(index_out_of_bounds, "return y[i]")
    assert (os.path.abspath(error.loc.filename), error.loc.lineno) == (THIS_FILE, lineno)
    assert error.message == (
        f"while executing getitem(f64[3], i64[]) (test_errors_foundation.py:{lineno}): "
        "IndexError: index 5 is out of bounds for axis 0 with size 3"
    )
    assert isinstance(error.__cause__, IndexError)


def positive_log(x):
    assert (x > 0).all(), "x must be positive"
    return np.log(x)


def test_tensor_assert_fails_when_the_graph_runs():
    static = dy2st.to_static(positive_log)
    np.testing.assert_allclose(static(np.ones(2)), np.zeros(2))
    with pytest.raises(AssertionError) as info:
        static(-np.ones(2))
    error = info.value
    assert type(error) is dy2st.GraphAssertionError
    check_error(
        error,
        dy2st.GraphAssertionError,
        positive_log,
        "assert (x > 0)",
        "assert",
        "assertion failed: x must be positive",
        None,
    )
    assert static.num_graphs == 1
