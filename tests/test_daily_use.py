"""Daily use: the switch that runs everything eagerly, retrace warnings, cache control, logging,
and the typed public API (docs/daily-use.md)."""

from __future__ import annotations

import logging
import os
import pathlib
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import dy2st


def step(x, lr):
    return x - lr * np.sin(x)


def test_enable_static_false_runs_the_python_function():
    runs_of_the_body = []

    @dy2st.to_static
    def where_am_i(x):
        runs_of_the_body.append(1)  # Python runs the body once per build, or once per eager call
        return x * 2.0

    def body_runs_per_call(calls: int = 3) -> float:
        before = len(runs_of_the_body)
        for _ in range(calls):
            np.testing.assert_array_equal(where_am_i(np.ones(2)), [2.0, 2.0])
        return (len(runs_of_the_body) - before) / calls

    where_am_i(np.ones(2))  # built
    assert body_runs_per_call() == 0
    with dy2st.enable_static(False):
        assert body_runs_per_call() == 1
    assert body_runs_per_call() == 0  # back on when the block ends
    dy2st.enable_static(False)  # a plain call switches until switched back
    try:
        assert body_runs_per_call() == 1
    finally:
        dy2st.enable_static(True)
    assert where_am_i.num_graphs == 1


def test_the_environment_variable_starts_with_graphs_off(tmp_path):
    script = tmp_path / "off.py"
    script.write_text(
        textwrap.dedent(
            """
            import numpy as np, dy2st

            @dy2st.to_static
            def f(x):
                return x + 1.0

            f(np.ones(2))
            print(f.num_graphs)
            """
        )
    )
    env = {**os.environ, "DY2ST_ENABLE_STATIC": "0"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"


def test_the_retrace_warning_names_the_argument_that_keeps_changing():
    converted = dy2st.to_static(step, static_argnames="lr")
    x = np.ones(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(dy2st.api.RETRACE_WARNING_GRAPHS + 3):
            converted(x, 0.1 * k)
    retraces = [w for w in caught if issubclass(w.category, dy2st.RetracingWarning)]
    assert len(retraces) == 1  # once per function
    assert "of 'lr'" in str(retraces[0].message) and "'x'" not in str(retraces[0].message)
    assert retraces[0].filename == __file__


def test_a_changing_float_argument_builds_one_graph():
    converted = dy2st.to_static(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dy2st.RetracingWarning)
        for k in range(dy2st.api.RETRACE_WARNING_GRAPHS + 3):
            converted(np.ones(3), 0.1 * k)
    assert converted.num_graphs == 2  # the first lr's graph, then one for every lr


def test_the_retrace_warning_names_a_changing_shape():
    converted = dy2st.to_static(step, dynamic=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, dy2st.api.RETRACE_WARNING_GRAPHS + 3):
            converted(np.ones(n), 0.5)
    retraces = [w for w in caught if issubclass(w.category, dy2st.RetracingWarning)]
    assert len(retraces) == 1
    assert "of 'x'" in str(retraces[0].message) and "'lr'" not in str(retraces[0].message)


def test_max_graphs_keeps_the_most_recently_used():
    converted = dy2st.to_static(step, max_graphs=2, static_argnums=1)
    x = np.ones(3)
    for lr in (0.1, 0.2, 0.1, 0.3):  # 0.2 is the least recently used when 0.3 arrives
        np.testing.assert_array_equal(converted(x, lr), step(x, lr))
    info = converted.cache_info()
    assert info.max_graphs == 2
    assert sorted(g.signature for g in info.graphs) == ["x: f64[3], lr: 0.1", "x: f64[3], lr: 0.3"]
    assert {g.signature: g.calls for g in info.graphs}["x: f64[3], lr: 0.1"] == 2
    assert all(g.build_seconds > 0 for g in info.graphs)


def test_cache_info_counts_fast_calls_and_clear_cache_drops_every_graph():
    converted = dy2st.to_static(lambda x: x * 2.0)
    for _ in range(5):
        converted(np.ones(4))  # all-positional arrays: the fast path
    converted(np.ones((2, 2)))
    info = converted.cache_info()
    assert info.calls == 6 and len(info.graphs) == 2
    converted.clear_cache()
    assert converted.num_graphs == 0 and converted.cache_info().graphs == []
    np.testing.assert_array_equal(converted(np.ones(4)), np.full(4, 2.0))
    assert converted.num_graphs == 1


def test_builds_are_logged_at_debug(caplog):
    converted = dy2st.to_static(step)
    with caplog.at_level(logging.DEBUG, logger="dy2st"):
        converted(np.ones(3), 0.5)
    messages = [r.getMessage() for r in caplog.records if r.name == "dy2st"]
    assert any("built graph 1 of step for x: f64[3], lr: 0.5 (a new signature) in" in m for m in messages)
    assert any(m.startswith("step: convert and stage took") for m in messages)
    assert any(m.startswith("step: pass cse (") for m in messages)
    assert any(m.startswith("step: generate the executor took") for m in messages)


SCALE = 2.0
WEIGHTS = np.ones(3)


def scaled_by_globals(x):
    return x * SCALE + WEIGHTS


def test_the_log_says_why_each_graph_was_built(caplog):
    global SCALE, WEIGHTS
    converted = dy2st.to_static(scaled_by_globals)
    with caplog.at_level(logging.DEBUG, logger="dy2st"):
        try:
            converted(np.ones(3))
            SCALE = 3.0
            converted(np.ones(3))
            WEIGHTS = np.ones(3, np.float32)
            converted(np.ones(3))
        finally:
            SCALE, WEIGHTS = 2.0, np.ones(3)
    built = [r.getMessage() for r in caplog.records if r.getMessage().startswith("built graph")]
    assert len(built) == 3
    assert "(a new signature)" in built[0]
    assert "(the value of 'SCALE' changed)" in built[1]
    assert "(the array 'WEIGHTS' now has another type)" in built[2]


def test_a_user_program_type_checks_with_mypy_strict(tmp_path):
    pytest.importorskip("mypy")
    program = tmp_path / "user_program.py"
    program.write_text(
        textwrap.dedent(
            """
            from typing import Any

            import numpy as np
            import numpy.typing as npt

            import dy2st


            def relu(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
                return np.maximum(x, 0.0)


            converted = dy2st.to_static(relu)
            result: Any = converted(np.ones(3))
            graph = dy2st.to_static(relu, dynamic=True).graph(np.ones(3))
            print(graph.to_dot())
            with dy2st.enable_static(False):
                pass
            gradient = dy2st.grad(lambda v: (v * v).sum())
            loaded: dy2st.LoadedFunction
            version: str = dy2st.__version__
            """
        )
    )
    root = pathlib.Path(dy2st.__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(program)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(root)},
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_closures_given_to_to_static_are_freed():
    import gc
    import weakref

    def make():
        big = np.ones(50_000)

        def uses_big(x):
            return x + big.sum()

        return uses_big, weakref.ref(big)

    alive = []
    for _ in range(1000):
        fn, ref = make()
        converted = dy2st.to_static(fn)
        converted(np.ones(3))
        alive.append(ref)
        del fn, converted
    gc.collect()
    assert sum(ref() is not None for ref in alive) == 0


class Scaled:
    def __init__(self, k):
        self.w = np.full(3, float(k))

    @dy2st.to_static
    def apply(self, x):
        return self.w * x


def test_instances_of_a_converted_method_are_freed_and_their_graphs_dropped():
    import gc
    import weakref

    alive = []
    with pytest.warns(dy2st.RetracingWarning, match="each object has graphs of its own"):
        for k in range(1000):
            obj = Scaled(k)
            np.testing.assert_array_equal(obj.apply(np.ones(3)), np.full(3, float(k)))
            alive.append(weakref.ref(obj))
            del obj
    gc.collect()
    assert sum(ref() is not None for ref in alive) == 0
    kept = Scaled(2)
    kept.apply(np.ones(3))
    kept.apply(np.ones(3))  # the same instance: its graph is reused
    assert len(Scaled.apply.cache_info().graphs) == 1  # the dead instances' graphs are gone


@pytest.mark.filterwarnings("ignore::dy2st.RetracingWarning")
def test_a_new_object_at_a_dead_objects_address_gets_its_own_graph():
    results = []
    for k in range(50):  # ids of dropped instances are reused by new ones
        results.append(Scaled(k).apply(np.ones(3))[0])
    assert results == [float(k) for k in range(50)]


class Doubling:
    def scale(self):
        return 2.0

    @dy2st.to_static
    def apply(self, x):
        return x * self.scale()


class Tripling(Doubling):
    def scale(self):
        return 3.0


@pytest.mark.filterwarnings("ignore::dy2st.RetracingWarning")
def test_a_graph_built_for_a_freed_instance_never_runs_for_another_at_its_address():
    """Instances held weakly free their ids: a new object at the same address once took the old
    one's fast call, and a Tripling returned the Doubling's result."""
    for k in range(300):
        obj = (Doubling if k % 2 == 0 else Tripling)()
        assert obj.apply(np.ones(2))[0] == obj.scale()
        del obj
