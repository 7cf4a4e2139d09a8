"""Every script in examples/ runs to completion as a script (each checks itself against NumPy)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

EXAMPLES_DIR = pathlib.Path(__file__).resolve().parent.parent / "examples"
EXAMPLES = sorted(EXAMPLES_DIR.glob("*.py"))


def test_the_foundation_examples_exist():
    names = {p.name for p in EXAMPLES}
    assert {"demo.py", "add_and_relu.py", "two_branch_model.py"} <= names


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs_and_exits_0(script, tmp_path):
    # From a scratch directory, so an example cannot depend on the working directory.
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{script.name} failed:\n{result.stdout}\n{result.stderr}"
    assert result.stdout.strip(), f"{script.name} printed nothing"


def test_demo_shows_source_ir_and_checks():
    result = subprocess.run(
        [sys.executable, str(EXAMPLES_DIR / "demo.py")], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "=== 1. transformed source" in out and "_dy2st.convert_call" in out
    assert "=== 2. IR before the passes" in out and "func @" in out
    assert " = cond %" in out  # the tensor `if` became a graph op
    assert "=== 3. IR after the passes" in out
    assert "converted == eager NumPy" in out


def test_readme_usage_example_runs(tmp_path):
    readme = (EXAMPLES_DIR.parent / "README.md").read_text()
    blocks = readme.split("```python\n")[1:]
    assert blocks, "README.md has no python example"
    script = tmp_path / "readme_example.py"  # a file: dy2st reads the function's source
    script.write_text("".join(block.split("```")[0] for block in blocks))
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert " = cond %" in result.stdout
