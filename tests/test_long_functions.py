"""Long functions keep exact locations: every op, and every error, names its own statement.

The build of a long function must not cost more per statement than a short one's
(``benchmarks/build_time.py`` measures that); these tests hold what the faster paths must keep:
each op's line and column, error locations deep in a function, the position table per code object.
"""

from __future__ import annotations

import gc
import importlib.util
import itertools
import sys

import numpy as np
import pytest

import dy2st
from dy2st import errors
from dy2st.errors import instruction_positions

STATEMENTS = 400
_modules = itertools.count()


def long_function(tmp_path, body: list[str], under_tensor_if: bool = False):
    """``f(x, flag)`` running ``body`` (one statement a line), from a real file, and its path."""
    indent = "        " if under_tensor_if else "    "
    lines = ["import numpy as np", "", "", "def f(x, flag):", "    y = x"]
    if under_tensor_if:
        lines.append("    if flag > 0:")
    lines += [indent + line for line in body]
    if under_tensor_if:
        lines += ["    else:", "        y = x"]
    lines.append("    return y")
    name = f"long_function_{next(_modules)}"
    path = tmp_path / f"{name}.py"
    path.write_text("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.f, path


def line_numbers(path, text: str) -> list[int]:
    return [i for i, line in enumerate(path.read_text().splitlines(), start=1) if text in line]


@pytest.mark.parametrize("under_tensor_if", [False, True])
def test_every_op_of_a_long_function_names_its_statements_line_and_column(tmp_path, under_tensor_if):
    f, path = long_function(tmp_path, ["y = np.tanh(y) * 0.5 + x"] * STATEMENTS, under_tensor_if)
    graph = dy2st.to_static(f).graph(np.ones(4), np.array(1.0), optimize=False)
    tanhs = [op for op in graph.walk() if op.name == "tanh"]
    assert [op.loc.lineno for op in tanhs] == line_numbers(path, "np.tanh(y)")
    first_line = path.read_text().splitlines()[tanhs[0].loc.lineno - 1]
    column = first_line.index("np.tanh(y)")
    assert {op.loc.col for op in tanhs} == {column}
    assert {op.loc.filename for op in tanhs} == {str(path)}


@pytest.mark.parametrize("under_tensor_if", [False, True])
def test_an_error_deep_in_a_long_function_names_its_line(tmp_path, under_tensor_if):
    body = ["y = np.tanh(y) * 0.5 + x"] * STATEMENTS
    body[STATEMENTS - 20] = "y = y + np.ones(3)"
    f, path = long_function(tmp_path, body, under_tensor_if)
    with pytest.raises(dy2st.Dy2stError) as caught:
        dy2st.to_static(f)(np.ones(4), np.array(1.0))
    (lineno,) = line_numbers(path, "np.ones(3)")
    source_line = path.read_text().splitlines()[lineno - 1]
    assert (caught.value.loc.lineno, caught.value.loc.col) == (lineno, source_line.index("y + np.ones(3)"))
    assert f":{lineno}:" in str(caught.value).splitlines()[0]
    assert source_line in str(caught.value)


def test_the_position_table_is_built_once_per_code_object_and_dropped_with_it():
    code = compile("def f(x):\n    return x + 1\n", "<a function>", "exec").co_consts[0]
    table = instruction_positions(code)
    assert table == tuple(code.co_positions())
    assert instruction_positions(code) is table
    key = id(code)
    assert key in errors._POSITIONS
    del code, table
    gc.collect()
    assert key not in errors._POSITIONS
