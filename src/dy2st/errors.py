"""Errors dy2st raises about the user's code, each pointing at the user's file and line.

Every error has the same shape, whatever the phase that raised it::

    model.py:9:9: error: 'y' is f32[512] in the true branch but f32[256] in the false branch
            y = W2 @ x
            ^
    note: a variable assigned in both branches of a tensor 'if' needs one shape and dtype
"""

from __future__ import annotations

import functools
import linecache
import os
import sys
import types
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar, cast

# (line, end line, column, end column) of one instruction, as ``co_positions`` gives it.
Position = tuple[int | None, int | None, int | None, int | None]


@dataclass(frozen=True)
class SourceLocation:
    """A place in the user's source: file, 1-based line, 0-based column (or None)."""

    filename: str
    lineno: int
    col: int | None = None

    @property
    def short(self) -> str:
        """``file.py:LINE`` with the file's base name, as printed in IR comments."""
        return f"{os.path.basename(self.filename)}:{self.lineno}"

    def display_name(self) -> str:
        """The file name relative to the working directory when it lies under it."""
        try:
            rel = os.path.relpath(self.filename)
        except ValueError:
            return self.filename
        return self.filename if rel.startswith("..") else rel

    def source_line(self) -> str:
        return linecache.getline(self.filename, self.lineno).rstrip("\n")

    def __str__(self) -> str:
        col = f":{self.col + 1}" if self.col is not None else ""
        return f"{self.display_name()}:{self.lineno}{col}"


def _package_dir(module_file: str) -> str:
    return os.path.dirname(os.path.abspath(module_file))


_DY2ST_DIR = _package_dir(__file__)
_SKIPPED_DIRS: tuple[str, ...] = (_DY2ST_DIR + os.sep,)


def _skip_dirs() -> tuple[str, ...]:
    global _SKIPPED_DIRS
    if len(_SKIPPED_DIRS) == 1:
        import numpy

        _SKIPPED_DIRS = (_DY2ST_DIR + os.sep, _package_dir(numpy.__file__) + os.sep)
    return _SKIPPED_DIRS


def user_frame(depth: int = 1):
    """The innermost stack frame outside dy2st and NumPy: the user's code being run.

    Converted code is compiled with the user's file name and line numbers, so this finds the
    original line even while the transformed function runs.
    """
    return next(user_frames(depth + 1), None)


def user_frames(depth: int = 1) -> Iterator[types.FrameType]:
    """Every stack frame outside dy2st and NumPy, innermost first (see ``user_frame``)."""
    skip = _skip_dirs()
    frame: types.FrameType | None = sys._getframe(depth + 1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(skip) and not filename.startswith("<frozen"):
            yield frame
        frame = frame.f_back


def user_location(depth: int = 1) -> SourceLocation | None:
    """The user's file, line and column being run (see ``user_frame``).

    ``depth`` counts from this function's caller, as for ``sys._getframe``: 1 is the caller.
    """
    # user_frame adds one level for its own frame; the caller of user_location is one level
    # above that. Passing depth + 1 here skipped the user's frame when it was the caller's caller
    # (bool(t) in user code: __bool__ -> _concrete -> user_location(3)).
    frame = user_frame(depth)
    return _frame_location(frame) if frame is not None else None


def _frame_location(frame) -> SourceLocation:
    col = None
    try:
        lineno, _, col, _ = instruction_positions(frame.f_code)[frame.f_lasti // 2]
    except (IndexError, ValueError, AttributeError):
        lineno = None
    if lineno is None:
        lineno, col = frame.f_lineno, None
    return SourceLocation(frame.f_code.co_filename, lineno, col)


# Staging asks the location of every op it emits, and each asks its frame's code object. The
# position table of a code object is as long as the function, so building it per op made a long
# function's build quadratic; it is built once per code object. The table is keyed by identity:
# hashing a code object (as a WeakKeyDictionary would) also reads the whole function. Each entry
# goes away with its code object, before the object's id can be reused.
_POSITIONS: dict[int, tuple[weakref.ref[types.CodeType], tuple[Position, ...]]] = {}


def instruction_positions(code: types.CodeType) -> tuple[Position, ...]:
    """``code.co_positions()`` as a tuple indexed by instruction (``f_lasti // 2``), built once."""
    entry = _POSITIONS.get(id(code))
    if entry is not None and entry[0]() is code:
        return entry[1]
    positions = tuple(code.co_positions())
    key = id(code)
    _POSITIONS[key] = (weakref.ref(code, lambda _: _POSITIONS.pop(key, None)), positions)
    return positions


class Dy2stError(Exception):
    """Base class of every error dy2st raises about the user's code.

    Attributes:
        message: what was expected and what was found.
        loc: the user's source location, when known.
        note: an optional hint on how to fix it.
    """

    kind = "error"

    def __init__(self, message: str, loc: SourceLocation | None = None, note: str | None = None):
        self.message = message
        self.loc = loc
        self.note = note
        super().__init__(self.render())

    def render(self) -> str:
        if self.loc is None:
            text = f"{self.kind}: {self.message}"
        else:
            text = f"{self.loc}: {self.kind}: {self.message}"
            line = self.loc.source_line()
            if line:
                text += "\n    " + line
                if self.loc.col is not None:
                    text += "\n    " + _caret_prefix(line, self.loc.col) + "^"
        if self.note:
            text += f"\nnote: {self.note}"
        return text

    def __str__(self) -> str:
        return self.render()


def _caret_prefix(line: str, col: int) -> str:
    # Keep tabs so the caret lines up under the same column in a terminal.
    return "".join(ch if ch == "\t" else " " for ch in line[:col])


class ConversionError(Dy2stError):
    """The function's source could not be converted (for example, its source is unavailable)."""


class UnsupportedSyntaxError(ConversionError):
    """A Python construct that dy2st cannot convert where it appears."""


class GraphBuildError(Dy2stError):
    """Building the graph failed: shapes or dtypes disagree, or an op is used wrongly."""

    # True for NumPy's own complaint about a call (``build_error``): raised where eager code
    # raises, and an instance of the class eager code raises.
    numpy_error = False


class TensorValueError(GraphBuildError):
    """A symbolic tensor was used where Python needs a concrete value (``bool(t)``, ``int(t)``...)."""

    needed: Any = None
    """The graph value whose concrete value was asked for and the graph's top-level block (an
    ``ir.core.Value`` and ``Block``), when known."""

    array_protocol = False
    """True when NumPy asked the tensor for its values (``__array__``): a NumPy call that found it
    inside a list, where its dispatch does not look."""


class UnsupportedOpError(GraphBuildError):
    """A NumPy function, method or argument that dy2st does not stage into the graph."""


class DifferentiationError(Dy2stError):
    """A gradient dy2st cannot build: an op without an adjoint rule, a non-scalar output given
    to ``grad``, an argument that is not a floating-point array or number."""


class Dy2stRuntimeError(Dy2stError):
    """An op failed while the graph ran; the message names the op and the user's line."""


_COMBINED_CLASSES: dict[tuple[type, type], type[Dy2stError]] = {}


def _combined_class(base: type[Dy2stError], cls: type[BaseException]) -> type[Dy2stError]:
    """``base`` that is also a ``cls`` (an ``IndexError`` raised by an op is still an
    ``IndexError`` for ``except IndexError:``), or plain ``base`` when Python cannot combine the
    two (built-in exceptions with their own layout). One class per pair."""
    key = (base, cls)
    if key in _COMBINED_CLASSES:
        return _COMBINED_CLASSES[key]
    combined: type[Dy2stError] = base
    if issubclass(cls, Exception) and not issubclass(cls, Dy2stError):
        try:
            combined = type(cls.__name__, (base, cls), {"__str__": Dy2stError.__str__})
            combined.__module__ = __name__
            combined.__qualname__ = f"{base.__name__}[{cls.__qualname__}]"
            combined.__doc__ = f"{base.__doc__} Also a {cls.__name__}, as eager NumPy raises."
        except TypeError:
            combined = base
    _COMBINED_CLASSES[key] = combined
    return combined


def _combined_error(base: type[Dy2stError], error: Exception, message: str, loc: SourceLocation | None, note=None):
    # A class whose constructor needs more than a message (NumPy's UFuncTypeError subclasses take
    # the ufunc and dtypes) is replaced by the nearest base class that takes one (TypeError).
    for cls in type(error).__mro__:
        if not issubclass(cls, Exception) or cls is Exception:
            break
        try:
            return _combined_class(base, cls)(message, loc, note)
        except TypeError:
            continue
    return base(message, loc, note)


def runtime_error(
    error: Exception, message: str, loc: SourceLocation | None, note: str | None = None
) -> Dy2stRuntimeError:
    """The error to raise when an op fails with ``error`` at run time: a ``Dy2stRuntimeError``
    naming the op and the user's line, and an instance of ``error``'s class too."""
    return cast(Dy2stRuntimeError, _combined_error(Dy2stRuntimeError, error, message, loc, note))


def build_error(
    error: Exception,
    message: str,
    loc: SourceLocation | None,
    note: str | None = None,
    base: type[GraphBuildError] | None = None,
) -> GraphBuildError:
    """The error to raise when staging an op fails where NumPy itself raises ``error`` (operands
    that do not broadcast, a bad axis...): a ``GraphBuildError`` (or ``base``, a subclass) at the
    user's line that is also an instance of ``error``'s class, so ``except ValueError:`` catches it
    as it catches eager's."""
    combined = cast(GraphBuildError, _combined_error(base or GraphBuildError, error, message, loc, note))
    combined.numpy_error = True
    return combined


class GraphAssertionError(Dy2stRuntimeError, AssertionError):
    """A tensor ``assert`` failed while the graph ran."""


# --- tracebacks ------------------------------------------------------------------------------------
# An error leaving dy2st's public API passes through 7-17 frames of dy2st's own (staging, the
# tracer, the executor) before the user's line. As JAX does, they are dropped from the traceback
# at the API boundary; the user's frames stay, converted code included (it is compiled with the
# user's file name and lines).

TRACEBACK_FILTERING = "DY2ST_TRACEBACK_FILTERING"
"""The environment variable that turns the filtering off: ``DY2ST_TRACEBACK_FILTERING=off``."""

FILTERED_NOTE = f"(dy2st hid its internal frames from this traceback; {TRACEBACK_FILTERING}=off shows them)"

_Function = TypeVar("_Function", bound=Callable[..., Any])


def public_api(fn: _Function) -> _Function:
    """Make ``fn`` a boundary of dy2st's public API: an exception it raises leaves with dy2st's
    internal frames hidden (``hide_internal_frames``). The bare ``raise`` re-raises without
    adding this frame back; the caller's frames are added as the exception travels on."""

    @functools.wraps(fn)
    def boundary(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as error:
            hide_internal_frames(error)
            raise

    return cast(_Function, boundary)


def hide_internal_frames(error: BaseException) -> None:
    """Drop dy2st's internal frames from the traceback of ``error`` and of the exceptions chained
    to it (``raise ... from``, or raised while handling another), unless the environment sets
    ``DY2ST_TRACEBACK_FILTERING=off``. The exception itself, its class and message are unchanged.
    A ``Dy2stError`` whose raising frame was hidden gets a note saying how to see it; other
    exceptions are left as eager code would raise them (a note would show in their traceback
    and in ``pytest.raises(match=...)``)."""
    if os.environ.get(TRACEBACK_FILTERING, "on").strip().lower() == "off":
        return
    raised_inside = False
    seen: set[int] = set()
    chain: list[BaseException | None] = [error]
    while chain:
        exception = chain.pop()
        if exception is None or id(exception) in seen:
            continue
        seen.add(id(exception))
        traceback, dropped_last = _user_frames(exception.__traceback__)
        if traceback is not exception.__traceback__:
            exception.with_traceback(traceback)
        if exception is error:
            raised_inside = dropped_last
        chain += [exception.__cause__, exception.__context__]
    if raised_inside and isinstance(error, Dy2stError) and FILTERED_NOTE not in getattr(error, "__notes__", ()):
        error.add_note(FILTERED_NOTE)


def _user_frames(traceback: types.TracebackType | None) -> tuple[types.TracebackType | None, bool]:
    """The traceback without dy2st's frames, and whether its last frame was dropped. Frames of
    libraries (the standard library, NumPy, gast, astor) go too when dy2st called them: ``ast.py``
    frames of a converter are dy2st's work, while NumPy frames the user's code called stay."""
    entries = []
    while traceback is not None:
        entries.append(traceback)
        traceback = traceback.tb_next
    kept = []
    called_by_dy2st = False
    libraries = _library_dirs()
    for entry in entries:
        filename = entry.tb_frame.f_code.co_filename
        if _is_internal(filename):
            called_by_dy2st = True
        elif _is_library(filename, *libraries):
            if not called_by_dy2st:
                kept.append(entry)
        else:
            called_by_dy2st = False
            kept.append(entry)
    if len(kept) == len(entries):
        return entries[0] if entries else None, False
    rebuilt = None
    for entry in reversed(kept):
        rebuilt = types.TracebackType(rebuilt, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return rebuilt, not kept or kept[-1] is not entries[-1]


def raising_user_location(error: BaseException) -> SourceLocation | None:
    """The user's line an exception was raised under: its traceback's innermost frame outside
    dy2st and the libraries it calls."""
    found = None
    entry = error.__traceback__
    libraries = _library_dirs()
    while entry is not None:
        filename = entry.tb_frame.f_code.co_filename
        if not _is_internal(filename) and not _is_library(filename, *libraries):
            found = SourceLocation(filename, entry.tb_lineno)
        entry = entry.tb_next
    return found


def _is_internal(filename: str) -> bool:
    """dy2st's own modules, and the code it generates (executors, fused kernels, fast calls)."""
    return filename.startswith(_DY2ST_DIR + os.sep) or filename.startswith("<dy2st")


def _library_dirs() -> tuple[str, tuple[str, ...]]:
    """The standard library's directory, and the directories of the libraries dy2st calls (those
    imported by now: one not imported has no frames)."""
    packages = (sys.modules.get(name) for name in ("numpy", "gast", "astor"))
    dirs = tuple(_package_dir(p.__file__) + os.sep for p in packages if p is not None and p.__file__)
    return os.path.dirname(os.__file__) + os.sep, dirs


def _is_library(filename: str, stdlib: str, packages: tuple[str, ...]) -> bool:
    if filename.startswith(packages) or filename.startswith("<frozen"):
        return True
    # Installed packages may live under the standard library's directory; they may be the user's.
    return filename.startswith(stdlib) and "-packages" + os.sep not in filename
