"""Errors leave dy2st's public API with dy2st's own frames hidden from their tracebacks (and from
the tracebacks of the exceptions chained to them), the user's frames kept, and every frame back
with DY2ST_TRACEBACK_FILTERING=off."""

from __future__ import annotations

import os
import types

import numpy as np
import pytest

import dy2st
from dy2st.errors import FILTERED_NOTE, TRACEBACK_FILTERING

DY2ST_DIR = os.path.dirname(os.path.abspath(dy2st.__file__)) + os.sep
STDLIB_DIR = os.path.dirname(os.__file__) + os.sep


def frames(traceback: types.TracebackType | None) -> list[tuple[str, str]]:
    """(file, function) of each frame, outermost first."""
    found = []
    while traceback is not None:
        found.append((traceback.tb_frame.f_code.co_filename, traceback.tb_frame.f_code.co_name))
        traceback = traceback.tb_next
    return found


def chain(error: BaseException) -> list[BaseException]:
    """``error`` and every exception chained to it."""
    found: list[BaseException] = []
    pending: list[BaseException | None] = [error]
    while pending:
        exception = pending.pop()
        if exception is not None and exception not in found:
            found.append(exception)
            pending += [exception.__cause__, exception.__context__]
    return found


def internal_frames(error: BaseException) -> list[tuple[str, str]]:
    return [
        (file, name)
        for exception in chain(error)
        for file, name in frames(exception.__traceback__)
        if file.startswith(DY2ST_DIR) or file.startswith("<dy2st")
    ]


def user_functions(error: BaseException) -> list[str]:
    """The functions of this file in the traceback of ``error``, outermost first."""
    return [name for file, name in frames(error.__traceback__) if file == __file__]


@pytest.fixture
def unfiltered(monkeypatch):
    monkeypatch.setenv(TRACEBACK_FILTERING, "off")


# --- graph build ---------------------------------------------------------------------------------
def add_rows(z, y):
    return z + y


def build_fails(x, y):
    z = x * 2.0
    return add_rows(z, y)


def call_build_fails():
    with pytest.raises(ValueError) as caught:
        dy2st.to_static(build_fails)(np.ones(3), np.ones(4))
    return caught.value


def test_a_build_error_shows_the_users_frames_and_none_of_dy2st():
    error = call_build_fails()
    assert isinstance(error, dy2st.GraphBuildError)
    assert user_functions(error) == ["call_build_fails", "build_fails", "add_rows"]
    assert internal_frames(error) == []
    assert FILTERED_NOTE in error.__notes__


def test_a_build_error_shows_every_frame_with_filtering_off(unfiltered):
    error = call_build_fails()
    assert user_functions(error) == ["call_build_fails", "build_fails", "add_rows"]
    assert len(internal_frames(error)) > 5
    assert FILTERED_NOTE not in getattr(error, "__notes__", [])


def test_graph_and_a_bound_method_hide_dy2st_frames_too():
    with pytest.raises(ValueError) as caught:
        dy2st.to_static(build_fails).graph(np.ones(3), np.ones(4))
    assert internal_frames(caught.value) == []
    assert user_functions(caught.value)[-2:] == ["build_fails", "add_rows"]

    class Model:
        @dy2st.to_static
        def forward(self, x):
            return x[7]  # out of bounds, known while the graph is built

    with pytest.raises(IndexError) as caught:
        Model().forward(np.ones(3))
    assert internal_frames(caught.value) == []
    assert user_functions(caught.value)[-1] == "forward"


def raises_itself(x):
    if x.shape[0] > 2:  # Python code, run while the graph is built
        raise KeyError("the user's own error")
    return x


def test_a_users_own_exception_while_building_keeps_its_class_and_frames():
    with pytest.raises(KeyError) as caught:
        dy2st.to_static(raises_itself)(np.ones(3))
    assert type(caught.value) is KeyError
    assert user_functions(caught.value)[-1] == "raises_itself"
    assert internal_frames(caught.value) == []
    assert not hasattr(caught.value, "__notes__")  # left as eager code raises it


# --- run time ------------------------------------------------------------------------------------
def pick(y, i):
    return y[i]


def test_a_run_time_index_error_and_its_numpy_cause_show_no_dy2st_frame():
    static = dy2st.to_static(pick)
    static(np.ones(3), np.array(1))
    for _ in range(2):  # the general path, then the fast call
        with pytest.raises(IndexError) as caught:
            static(np.ones(3), np.array(5))
        error = caught.value
        assert isinstance(error, dy2st.Dy2stRuntimeError)
        assert type(error.__cause__) is IndexError  # NumPy's own error, chained
        assert internal_frames(error) == []
        assert user_functions(error) == ["test_a_run_time_index_error_and_its_numpy_cause_show_no_dy2st_frame"]
        assert error.loc.filename == __file__  # the user's line of y[i] is in the message


def test_a_run_time_error_shows_the_executor_with_filtering_off(unfiltered):
    static = dy2st.to_static(pick)
    with pytest.raises(IndexError) as caught:
        static(np.ones(3), np.array(5))
    names = [name for _, name in internal_frames(caught.value)]
    assert "__call__" in names and "run" in names  # the API and the generated executor


# --- conversion ----------------------------------------------------------------------------------
def generator(x):
    yield x


def test_a_conversion_error_shows_no_frame_of_dy2st_or_of_the_ast_module_it_calls():
    static = dy2st.to_static(generator)
    for convert in (lambda: static(np.ones(3)), lambda: static.code):
        with pytest.raises(dy2st.UnsupportedSyntaxError) as caught:
            convert()
        all_frames = frames(caught.value.__traceback__)
        assert internal_frames(caught.value) == []
        assert not [file for file, _ in all_frames if file.startswith(STDLIB_DIR)]
        assert (
            user_functions(caught.value)[0]
            == "test_a_conversion_error_shows_no_frame_of_dy2st_or_of_the_ast_module_it_calls"
        )


def test_a_conversion_error_shows_every_frame_with_filtering_off(unfiltered):
    with pytest.raises(dy2st.UnsupportedSyntaxError) as caught:
        dy2st.to_static(generator)(np.ones(3))
    assert internal_frames(caught.value)


def test_to_static_refusing_a_numpy_function_hides_its_frames():
    with pytest.raises(dy2st.ConversionError) as caught:
        dy2st.to_static(np.sin)
    assert internal_frames(caught.value) == []
    with pytest.raises(TypeError) as caught:
        dy2st.to_static(fallback=True)(staticmethod(pick))
    assert internal_frames(caught.value) == []


# --- cond and while_loop called directly ---------------------------------------------------------
def failing_branch():
    return np.ones(2) + np.ones(3)


def test_cond_and_while_loop_called_directly_hide_their_frames():
    with pytest.raises(ValueError) as caught:
        dy2st.cond(np.array(True), failing_branch, lambda: None)
    assert user_functions(caught.value)[-1] == "failing_branch"
    assert internal_frames(caught.value) == []
    with pytest.raises(ValueError) as caught:
        dy2st.while_loop(lambda v: v < 1, lambda v: failing_branch(), 0)
    assert user_functions(caught.value)[-1] == "failing_branch"
    assert internal_frames(caught.value) == []


def test_cond_called_directly_shows_its_frames_with_filtering_off(unfiltered):
    with pytest.raises(ValueError) as caught:
        dy2st.cond(np.array(True), failing_branch, lambda: None)
    assert internal_frames(caught.value)
