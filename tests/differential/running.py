"""Run a program eagerly and converted, and classify how the converted run differs.

Each side starts from the same state: the module's global arrays and generators as loaded, and
``np.random.seed(LEGACY_SEED)``. It then makes the program's calls one after the other on fresh
copies of their arguments (so generators and globals carry their state from call to call, as
in a user's session), and records after each call the result or exception, the arguments and
the module's state. The converted side must leave exactly what the eager side leaves.
"""

from __future__ import annotations

import contextlib
import copy
import enum
import importlib.util
import itertools
import re
import signal
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

import dy2st

from .compare import GENERATORS, difference, generator_state
from .program import Call, Program

LEGACY_SEED = 20240601
SECONDS_PER_CALL = 30  # a converted loop that never ends is a crash, not a stuck run
_module_names = itertools.count()


class Category(enum.IntEnum):
    """How a program's converted run compares with eager; higher is worse."""

    PASSED = 0
    REFUSAL = 1  # a dy2st build/conversion error on code eager NumPy runs
    CRASH = 2  # an exception that is not a dy2st error, or not eager's exception class
    MISMATCH = 3  # different results, types, arguments, globals or generator states


@dataclass(frozen=True)
class Failure:
    category: Category
    signature: str  # the failure class: what differs, or which error, without names and numbers
    detail: str  # the full story of one occurrence, for the report
    call_index: int  # the first call whose outcome differs


@dataclass
class Side:
    """What one call left on one side."""

    result: Any
    error: Exception | None
    arguments: tuple[Any, ...]
    state: dict[str, Any]


class ProgramTimeout(BaseException):
    """A call ran past its time limit. Not an ``Exception``: dy2st retries a failed build
    (rolled loops unrolled, symbolic sizes made static), and a timeout it caught as a failure
    would restart the endless loop it interrupted, with no second alarm to stop it."""


# --- loading ------------------------------------------------------------------------------------
def load_module(source: str, directory: Path, stem: str) -> ModuleType:
    """The program as a real module (dy2st reads the source file). Every load gets a new file
    name, so no cache keyed by file and line mistakes one program for another."""
    name = f"{stem}_{next(_module_names)}"
    path = directory / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def module_state(module: ModuleType) -> dict[str, Any]:
    """Copies of the module's global arrays, its generators' states, and np.random's state."""
    state: dict[str, Any] = {"np.random": np.random.get_state(legacy=False)}
    for name, value in vars(module).items():
        if isinstance(value, np.ndarray):
            state[f"global {name}"] = value.copy()
        elif isinstance(value, GENERATORS):
            state[f"global {name}"] = generator_state(value)
    return state


def restore_module_state(module: ModuleType, state: dict[str, Any]) -> None:
    for key, saved in state.items():
        if key == "np.random":
            np.random.seed(LEGACY_SEED)
            continue
        value = getattr(module, key.removeprefix("global "))
        if isinstance(value, np.ndarray):
            np.copyto(value, saved)
        elif isinstance(value, np.random.RandomState):
            value.set_state(saved)
        else:
            value.bit_generator.state = saved


# --- running --------------------------------------------------------------------------------------
@contextlib.contextmanager
def _time_limit(seconds: int):
    def expire(signum, frame):
        raise ProgramTimeout(f"the call ran longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _call(fn, call: Call, module: ModuleType, seconds: int) -> Side:
    args, kwargs = copy.deepcopy(call.args), copy.deepcopy(call.kwargs)
    result, error = None, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with _time_limit(seconds):
                result = fn()(*args, **kwargs)
        except (Exception, ProgramTimeout) as raised:  # the comparison is about which exception, if any
            error = raised
    return Side(result, error, args + tuple(kwargs.values()), module_state(module))


def run_side(fn, module: ModuleType, calls: tuple[Call, ...], initial: dict[str, Any], seconds: int) -> list[Side]:
    """``fn()`` gives the function to call (converting may raise: that call then raises)."""
    restore_module_state(module, initial)
    return [_call(fn, call, module, seconds) for call in calls]


def run_program(program: Program, directory: Path, seconds: int = SECONDS_PER_CALL) -> Failure | None:
    """How the converted calls differ from the eager ones (the worst difference), or None."""
    module = load_module(program.source, directory, f"generated_{program.family}_{program.seed}")
    initial = module_state(module)
    eager = run_side(lambda: module.program, module, program.calls, initial, seconds)
    if program.changing_sizes and not eager[0].error and any(side.error for side in eager[1:]):
        # The program is written for its first call's sizes (``x[:4] + g.normal(size=4)``): eager
        # code fails part-way at other sizes, where a graph fails before running.
        return None
    converted_fn = _lazily(lambda: dy2st.to_static(module.program))
    converted = run_side(converted_fn, module, program.calls, initial, seconds)
    # The first call that differs: later calls start from states that already differ (a refused
    # call drew no random numbers), so what they show would not be a failure of its own.
    for i, (c, e) in enumerate(zip(converted, eager)):
        failure = compare_sides(c, e, i, module.__file__ or "")
        if failure is not None:
            return _with_call(failure, program.calls[i], e)
    return None


def _lazily(make):
    made: list[Any] = []

    def get():
        if not made:
            made.append(make())
        return made[0]

    return get


def _with_call(failure: Failure, call: Call, eager: Side) -> Failure:
    expected = f"eager raised {_describe_error(eager.error)}" if eager.error else f"eager returned {eager.result!r}"
    detail = f"call {failure.call_index + 1}: {call!r}\n{expected}\n{failure.detail}"
    return Failure(failure.category, failure.signature, detail, failure.call_index)


# --- classifying ---------------------------------------------------------------------------------
def is_refusal(error: BaseException) -> bool:
    """A dy2st error raised while converting or building: dy2st declined the code."""
    return isinstance(error, dy2st.Dy2stError) and not isinstance(error, dy2st.Dy2stRuntimeError)


def compare_sides(converted: Side, eager: Side, call_index: int, source_file: str) -> Failure | None:
    if isinstance(converted.error, ProgramTimeout) and isinstance(eager.error, ProgramTimeout):
        return None  # both loop forever: what the arguments hold when the alarm rings is arbitrary
    if converted.error is not None and not (eager.error is not None and isinstance(converted.error, type(eager.error))):
        category = Category.REFUSAL if eager.error is None and is_refusal(converted.error) else Category.CRASH
        signature = f"{_error_class(converted.error)}: {normalized_message(converted.error)}"
        if _names_another_file(converted.error, source_file):
            signature += " [the error names another file than the program's]"
        if eager.error is not None:
            signature = f"raised instead of {type(eager.error).__name__}: {signature}"
        return Failure(category, signature, f"converted raised {_describe_error(converted.error)}", call_index)
    if eager.error is not None and converted.error is None:
        detail = f"converted returned {converted.result!r}"
        return Failure(
            Category.MISMATCH, f"returned where eager raised {type(eager.error).__name__}", detail, call_index
        )
    found = _first_difference(converted, eager)
    if found is None:
        return None
    signature = f"{_where_kind(found.where)} {found.aspect}"
    if found.aspect == "type":
        signature += f" ({found.detail})"
    if eager.error is not None:
        signature = f"after both raised: {signature}"
    return Failure(Category.MISMATCH, signature, f"converted differs: {found}", call_index)


def _names_another_file(error: Exception, source_file: str) -> bool:
    """A dy2st error must name the user's line; the program is the only user code that runs."""
    loc = getattr(error, "loc", None)
    return isinstance(error, dy2st.Dy2stError) and loc is not None and Path(loc.filename) != Path(source_file)


def _first_difference(converted: Side, eager: Side):
    if eager.error is None:
        found = difference(converted.result, eager.result)
        if found is not None:
            return found
    for i, (c, e) in enumerate(zip(converted.arguments, eager.arguments)):
        found = difference(c, e, f"argument {i} after the call")
        if found is not None:
            return found
    for key, expected in eager.state.items():
        found = difference(converted.state[key], expected, f"{key} after the call")
        if found is not None:
            return found
    return None


def _where_kind(where: str) -> str:
    """'result[1][0]' -> 'result', 'argument 2 after the call' -> 'argument'."""
    where = re.sub(r"\[.*\]", "", where).removesuffix(" after the call")
    return re.sub(r"^(argument|global) \S+", r"\1", where)


def _error_class(error: BaseException) -> str:
    return type(error).__qualname__


def _describe_error(error: BaseException) -> str:
    return f"{_error_class(error)}: {error}"


def normalized_message(error: BaseException) -> str:
    """The first line of the message without location, quoted names, types and numbers."""
    lines = str(error).strip().splitlines()
    text = lines[0] if lines else ""
    text = re.sub(r"^\S+:\d+(:\d+)?: \w+: ", "", text)
    text = re.sub(r"\(\S+\.py:\d+\)", "", text)
    text = re.sub(r"'[^']*'", "'…'", text)
    text = re.sub(r"\b[a-z]+\d+\[[^\]]*\]", "T", text)
    text = re.sub(r"\b\d+\b", "N", text)
    return text[:160]
