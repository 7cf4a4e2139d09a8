"""The example programs (examples/) as modules, loaded from their files under fresh names, for
the tests that save, export or draw them."""

from __future__ import annotations

import importlib.util
import itertools
import pathlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
_loads = itertools.count()


def load_example(name: str) -> ModuleType:
    """``examples/<name>.py`` run as a new module (its ``main`` is not called)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}_{next(_loads)}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_rng = np.random.default_rng(0)


def _f32(*shape: int) -> np.ndarray:
    return _rng.standard_normal(shape).astype(np.float32)


EXAMPLE_CALLS: list[tuple[str, str, Callable[[], tuple[Any, ...]]]] = [
    ("add_and_relu", "add_and_relu", lambda: (_f32(3, 4), _f32(4))),
    ("two_branch_model", "model", lambda: (_f32(32, 128), _f32(32, 128))),
    ("seed_flag_model", "model", lambda: (_f32(512), np.array(1))),
    ("newton_sqrt", "newton_sqrt", lambda: (np.array(2.0), 1e-12)),
    ("gcd_collatz", "gcd", lambda: (np.array(1071), np.array(462))),
    ("gcd_collatz", "collatz_steps", lambda: (np.array(27),)),
    ("recurrent_loop", "settle", lambda: (_f32(16), 1e-4, 50)),
    ("rnn", "rnn", lambda: (_f32(10, 8), np.zeros(32, np.float32), 10)),
    ("demo", "model", lambda: (_f32(16), np.array(1))),
]
"""(example module, function, its arguments): a call of each example's converted function."""
