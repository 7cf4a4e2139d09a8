"""Which functions and files are the user's (converted) rather than a library's (called as is)."""

from __future__ import annotations

import functools
import os
import sysconfig
import types
from typing import Any


@functools.cache
def library_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    dy2st_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return tuple(os.path.abspath(d) + os.sep for d in dirs) + (dy2st_dir + os.sep,)


def is_user_function(fn: Any) -> bool:
    """True for a plain Python function from the user's code (not NumPy, stdlib or dy2st)."""
    if not isinstance(fn, types.FunctionType) or fn.__name__ == "<lambda>":
        return False
    module = getattr(fn, "__module__", "") or ""
    if module.split(".")[0] in ("numpy", "dy2st"):
        return False
    filename = fn.__code__.co_filename
    return not filename.startswith("<") and not is_library_file(filename)


def is_library_file(filename: str) -> bool:
    """True for a file of the standard library, an installed package or dy2st itself."""
    return os.path.abspath(filename).startswith(library_dirs())
