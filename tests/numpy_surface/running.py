"""Run a sample call of the table converted and eagerly, compare the two, and say which layer of
dy2st converted it.

Each sample becomes ``def sample(<the arguments it reads>): return <expression>`` in a module file
of its own (dy2st reads source code), always at the same lines, so error messages that name the
line are the same from run to run. ``run_sample`` calls it eagerly and through a fresh
``dy2st.to_static`` (one graph per shape, no symbolic sizes) on copies of the same arguments, and
compares results and the arguments' contents afterwards: same types, structure, shapes, dtypes,
and values (floats within a tolerance scaled to the dtype, NaNs matching).
"""

from __future__ import annotations

import ast
import copy
import importlib.util
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import dy2st
from dy2st.ir.opcodes import CONST, RETURN
from dy2st.ir.symbolic import is_data_dependent
from dy2st.ops.generic import NUMPY_CALL
from numpy_surface.arguments import ARGUMENTS, BASE, VARIANTS, Variant, make_arguments
from numpy_surface.calls import CALLS

# --- outcomes ------------------------------------------------------------------------------------
PRECISE = "precise"
"""Converted with eager's result, and no ``numpy_call`` op in the graph: hand-written rules."""
GENERIC = "generic"
"""Converted with eager's result through the generic layer: the graph has a ``numpy_call`` op."""
LITERAL = "literal only"
"""A call on literals alone (``np.hanning(5)``): computed while the graph is built, a constant."""
SAME_ERROR = "same error"
"""Eager NumPy raised, and the converted function raised the same exception class."""
REFUSED = "refused"
"""Eager NumPy gave a result; dy2st raised one of its errors while converting or building."""
RUN_ERROR = "run error"
"""The graph was built, and raised a ``Dy2stRuntimeError`` when it ran."""
CRASH = "crash"
"""dy2st raised an exception that is not one of its errors: a bug inside dy2st."""
MISMATCH = "mismatch"
"""Both gave results, and they differ (type, structure, shape, dtype, values or arguments)."""
WRONG_ERROR = "wrong error"
"""Eager NumPy raised, and the converted function gave a result or raised another class."""
EAGER_ERROR = "eager error"
"""Eager NumPy raised on the base arguments: the sample itself is wrong."""

CONVERTED = (PRECISE, GENERIC, LITERAL)
PASSED = (*CONVERTED, SAME_ERROR)


@dataclass(frozen=True)
class Outcome:
    status: str
    detail: str = ""
    """The failure (error's first line, or the first difference); for ``GENERIC``, the NumPy
    functions the ``numpy_call`` ops call."""
    data_dependent: bool = False
    """Whether a ``numpy_call`` result has a size read from the result when the graph runs."""

    @property
    def passed(self) -> bool:
        return self.status in PASSED


@dataclass(frozen=True)
class Sample:
    name: str
    """The table name it samples (``np.roll``)."""
    source: str
    """The expression (``np.roll(x, 2, axis=1)``)."""
    arguments: tuple[str, ...]
    """The fixed arguments it reads, in ``ARGUMENTS`` order."""


def arguments_read(source: str) -> tuple[str, ...]:
    names = {node.id for node in ast.walk(ast.parse(source, mode="eval")) if isinstance(node, ast.Name)}
    return tuple(name for name in ARGUMENTS if name in names)


def all_samples() -> list[Sample]:
    """Every sample call of the table, by name, in table order."""
    return [Sample(name, source, arguments_read(source)) for name in sorted(CALLS) for source in CALLS[name]]


def variants_of(sample: Sample) -> Iterator[Variant]:
    """The base variant, and each other variant that changes one of the sample's arguments."""
    for variant in VARIANTS:
        if variant is BASE or any(variant.changes(name) for name in sample.arguments):
            yield variant


# --- sample functions ----------------------------------------------------------------------------
MODULE_NAME = "surface_sample"


def sample_function(sample: Sample, directory: Path, index: int) -> Callable[..., Any]:
    """``def sample(<arguments>): return <expression>``, from module file ``directory/...{index}.py``."""
    name = f"{MODULE_NAME}_{index}"
    path = directory / f"{name}.py"
    path.write_text(f"import numpy as np\n\n\ndef sample({', '.join(sample.arguments)}):\n    return {sample.source}\n")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.sample


# --- running -------------------------------------------------------------------------------------
def run_sample(function: Callable[..., Any], sample: Sample, variant: Variant = BASE) -> Outcome:
    """Call ``function`` (the sample's) eagerly and converted on ``variant``'s arguments."""
    arguments = list(make_arguments(sample.arguments, variant).values())
    eager_arguments, converted_arguments = copy.deepcopy(arguments), copy.deepcopy(arguments)
    static: Any = dy2st.to_static(function, dynamic=False)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        expected, expected_error = _call(function, eager_arguments)
        actual, actual_error = _call(static, converted_arguments)
    if expected_error is not None:
        if variant is BASE:
            return Outcome(EAGER_ERROR, describe_error(expected_error))
        return _compare_errors(expected_error, actual_error)
    if actual_error is not None:
        return Outcome(_failure_status(actual_error), describe_error(actual_error))
    difference = first_difference(actual, expected, "result")
    for k, (after, eager_after) in enumerate(zip(converted_arguments, eager_arguments)):
        difference = difference or first_difference(
            after, eager_after, f"argument {sample.arguments[k]} after the call"
        )
    if difference:
        return Outcome(MISMATCH, difference)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = static.graph(*copy.deepcopy(arguments))
    return _layer(graph, sample)


def _call(function: Callable[..., Any], arguments: list[Any]) -> tuple[Any, BaseException | None]:
    try:
        return function(*arguments), None
    except Exception as error:  # which exception, if any, is what is compared
        return None, error


def _compare_errors(expected: BaseException, actual_error: BaseException | None) -> Outcome:
    """Eager raised ``expected``: the converted call must raise its class too."""
    cls = public_class(type(expected))
    if isinstance(actual_error, cls):
        return Outcome(SAME_ERROR, cls.__name__)
    got = "a result" if actual_error is None else describe_error(actual_error)
    return Outcome(WRONG_ERROR, f"eager raises {cls.__name__}, converted gives {got}")


def _failure_status(error: BaseException) -> str:
    if isinstance(error, dy2st.Dy2stRuntimeError):
        return RUN_ERROR
    if isinstance(error, dy2st.Dy2stError):
        return REFUSED
    return CRASH


def _layer(graph: Any, sample: Sample) -> Outcome:
    ops = list(graph.walk())
    generic = [op for op in ops if op.name == NUMPY_CALL]
    if generic:
        functions = sorted({op.attrs["function"] for op in generic})
        data_dependent = any(is_data_dependent(d) for op in generic for r in op.results for d in r.type.shape)
        return Outcome(GENERIC, ", ".join(functions), data_dependent)
    if not sample.arguments and all(op.name in (CONST, RETURN) for op in ops):
        return Outcome(LITERAL)
    return Outcome(PRECISE)


# --- comparing -----------------------------------------------------------------------------------
def first_difference(actual: Any, expected: Any, where: str) -> str | None:
    """How ``actual`` differs from eager's ``expected`` (the first difference), or None."""
    if type(actual) is not type(expected):
        return f"{where} is {_kind(actual)} where eager gives {_kind(expected)}"
    if isinstance(expected, (tuple, list)):
        if len(actual) != len(expected):
            return f"{where} has {len(actual)} items where eager has {len(expected)}"
        for k, (a, e) in enumerate(zip(actual, expected)):
            difference = first_difference(a, e, f"{where}[{k}]")
            if difference:
                return difference
        return None
    if isinstance(expected, (np.ndarray, np.generic)):
        return _array_difference(actual, expected, where)
    if actual == expected or (actual != actual and expected != expected):  # NaN == NaN here
        return None
    return f"{where} is {actual!r} where eager gives {expected!r}"


def _kind(value: Any) -> str:
    """``ndarray float64[3, 4]``, ``np.float64`` (a NumPy scalar), ``float`` (a Python one)."""
    if isinstance(value, np.ndarray):
        return f"ndarray {value.dtype}{list(value.shape)}"
    if isinstance(value, np.generic):
        return f"np.{type(value).__name__}"
    return type(value).__name__


def _array_difference(actual: Any, expected: Any, where: str) -> str | None:
    if actual.shape != expected.shape:
        return f"{where} has shape {actual.shape} where eager has {expected.shape}"
    if actual.dtype != expected.dtype:
        return f"{where} has dtype {actual.dtype} where eager has {expected.dtype}"
    actual, expected = np.asarray(actual), np.asarray(expected)
    if expected.dtype.kind in "fc":
        resolution = float(np.finfo(expected.dtype).resolution)
        magnitudes = np.abs(expected)
        finite = magnitudes[np.isfinite(magnitudes)]
        scale = max(1.0, float(finite.max())) if finite.size else 1.0
        close = np.isclose(actual, expected, rtol=100 * resolution, atol=100 * resolution * scale, equal_nan=True)
        close |= actual == expected  # infinities of the same sign
    elif expected.dtype.kind in "biuSUV":
        close = np.asarray(actual == expected)
    else:
        return None  # object, datetime: not produced by the samples
    if np.all(close):
        return None
    bad = np.argwhere(~np.atleast_1d(close))[0]
    at = tuple(int(k) for k in bad) if expected.ndim else ()
    return f"{where} differs at {at}: {actual[at]!r} where eager has {expected[at]!r}"


# --- describing errors ---------------------------------------------------------------------------
_LOCATION = re.compile(r"^\S*?\.py:\d+(:\d+)?: (error: )?")
_SAMPLE_FILE = re.compile(rf"[^\s(]*{MODULE_NAME}_\d+\.py")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def describe_error(error: BaseException) -> str:
    """``Class: first line of the message``, without the user's file name or memory addresses:
    the same text on every run."""
    lines = str(error).splitlines()
    text = _LOCATION.sub("", lines[0]) if lines else ""
    text = _ADDRESS.sub("0x...", _SAMPLE_FILE.sub("sample.py", text))
    return f"{type(error).__qualname__}: {text}".rstrip()


def public_class(cls: type[BaseException]) -> type[BaseException]:
    """The nearest class of ``cls`` (itself or a base) a program can name: a builtin exception or
    one of ``numpy.exceptions`` / ``numpy.linalg`` (NumPy's private ``_UFuncNoLoopError`` is
    caught as ``TypeError``)."""
    for base in cls.__mro__:
        if base.__module__ == "builtins":
            return base
        for namespace in (np.exceptions, np.linalg):
            if getattr(namespace, base.__name__, None) is base:
                return base
    return cls
