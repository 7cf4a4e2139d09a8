"""Builds run with CPython's automatic garbage collection off and give it back as they found it.

A build's collections would each traverse every object in the process (the reason is in
``api._without_automatic_collection``); what matters to users is that the switch is restored
whatever happens, and that a process which turned collection off keeps it off.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

import dy2st

SEEN_WHILE_BUILDING: list[bool] = []


def records_the_collector(x):
    SEEN_WHILE_BUILDING.append(gc.isenabled())  # Python code: runs once, while the graph is built
    return np.tanh(x) + 1.0


def fails_to_build(x):
    return x @ np.ones((5, 2))


@pytest.fixture
def collection_on():
    was_enabled = gc.isenabled()
    gc.enable()
    yield
    if not was_enabled:
        gc.disable()


def test_a_build_runs_without_automatic_collection_and_turns_it_back_on(collection_on):
    SEEN_WHILE_BUILDING.clear()
    converted = dy2st.to_static(records_the_collector)
    converted(np.ones(3))
    converted.graph(np.ones(4), optimize=False)
    assert SEEN_WHILE_BUILDING == [False, False]
    assert gc.isenabled()


def test_a_failed_build_turns_collection_back_on(collection_on):
    with pytest.raises(dy2st.Dy2stError):
        dy2st.to_static(fails_to_build)(np.ones(3))
    assert gc.isenabled()


def test_a_process_that_turned_collection_off_keeps_it_off(collection_on):
    gc.disable()
    dy2st.to_static(records_the_collector)(np.ones(5))
    assert not gc.isenabled()
