"""The README's command-line examples run as written, from the repository root."""

from __future__ import annotations

import pathlib
import re
import shlex
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    """Every ``dy2st ...`` command in the README's ``sh`` blocks (continuation lines joined,
    comments dropped)."""
    text = (ROOT / "README.md").read_text()
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        joined = block.replace("\\\n", " ")
        for line in joined.splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("dy2st "):
                commands.append(line)
    return commands


def test_the_readme_shows_dump_and_passes():
    commands = readme_commands()
    assert any(" dump " in f" {c} " for c in commands)
    assert any(c.split()[:2] == ["dy2st", "passes"] for c in commands)


@pytest.mark.parametrize("command", readme_commands())
def test_readme_command_runs(command: str) -> None:
    argv = [sys.executable, "-m", "dy2st", *shlex.split(command)[1:]]
    result = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
    assert result.stdout.strip()


def help_examples() -> list[str]:
    """The example commands ``dy2st dump --help`` prints."""
    result = subprocess.run([sys.executable, "-m", "dy2st", "dump", "--help"], capture_output=True, text=True)
    return [line.strip() for line in result.stdout.splitlines() if line.strip().startswith("dy2st dump ")]


def test_the_help_has_examples():
    assert len(help_examples()) >= 3


@pytest.mark.parametrize("command", help_examples())
def test_help_example_runs(command: str) -> None:
    argv = [sys.executable, "-m", "dy2st", *shlex.split(command)[1:]]
    result = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
