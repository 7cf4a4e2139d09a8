"""``for`` loops: a Python loop over Python iterables, a ``while_loop`` over tensor ones.

The loop converter rewrites the iterable calls it recognises, so a tensor bound is never turned into
a Python int::

    for i in range(n):        ->  _dy2st.convert_for(_dy2st.for_range(n), loop_body, ...)
    for i, row in enumerate(X) -> _dy2st.for_enumerate(X)
    for a, b in zip(X, Y)     ->  _dy2st.for_zip(X, Y)

With Python arguments these return the builtin ``range``/``enumerate``/``zip`` objects and the loop
is unrolled while the graph is built. With a tensor argument they return a ``StagedIterable``:
something indexed by a counter ``k`` from 0 to its length, and ``convert_for`` stages
``k = 0; while k < length: loop_body(item(k)); k += 1`` as one ``while_loop`` op. Iterating a tensor
directly (``for row in X``) goes over its rows the same way.
"""

from __future__ import annotations

import abc
import builtins
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from dy2st.errors import (
    GraphBuildError,
    SourceLocation,
    UnsupportedSyntaxError,
    build_error,
    user_frame,
    user_location,
)
from dy2st.ir.symbolic import SymExpr
from dy2st.runtime.control_flow.cond import cond
from dy2st.runtime.control_flow.logical import convert_logical_and, convert_logical_not
from dy2st.runtime.control_flow.loops import LoopState, stage_while_loop
from dy2st.runtime.control_flow.rolling import UNROLL_ROWS_AT_MOST, current_policy
from dy2st.runtime.control_flow.values import python_number, size_number, wrap_result
from dy2st.staging.builder import GraphBuilder, current_builder
from dy2st.staging.tensor import Tensor

_COUNTER = "loop counter"  # not an identifier: never clashes with a user variable


class StagedIterable(abc.ABC):
    """A sequence the graph iterates: ``length()`` items, the ``k``-th given by ``item(k)``."""

    builder: GraphBuilder

    @abc.abstractmethod
    def length(self) -> Any:
        """How many items (a Python int or a 0-d integer tensor)."""

    @abc.abstractmethod
    def item(self, k: Any) -> Any:
        """The ``k``-th item: ``k`` is the loop counter (a 0-d int tensor), or a Python int where
        the loop unrolls."""


class StagedRange(StagedIterable):
    """``range(start, stop, step)`` where some bound is a 0-d integer tensor."""

    def __init__(self, builder: GraphBuilder, start: Any, stop: Any, step: Any):
        self.builder = builder
        self.start, self.stop, self.step = start, stop, step

    def length(self) -> Any:
        if all(isinstance(bound, int) for bound in (self.start, self.stop, self.step)):
            return len(range(self.start, self.stop, self.step))  # a rolled Python range
        if isinstance(self.start, int) and isinstance(self.step, int) and (self.start, self.step) == (0, 1):
            return _at_least_zero(self.stop)
        if isinstance(self.step, int) and self.step in (1, -1):
            return _at_least_zero(self.stop - self.start if self.step == 1 else self.start - self.stop)
        # ceil((stop - start) / step), for either sign of step, and never negative.
        return _at_least_zero(-((self.start - self.stop) // self.step))

    def item(self, k: Any) -> Any:
        if isinstance(self.start, int) and isinstance(self.step, int) and (self.start, self.step) == (0, 1):
            return k  # the counter itself: range(n) is by far the most common loop
        steps = k if isinstance(self.step, int) and self.step == 1 else k * self.step
        value = steps if isinstance(self.start, int) and self.start == 0 else self.start + steps
        return _as_python_int(self.builder, value)


def _at_least_zero(count: Any) -> Any:
    """``max(count, 0)``. A count computed from Python ints (the counter of an enclosing rolled
    loop, ``range(i)``) stays one, by Python's own operators, which the generated code runs on
    Python ints (``np.maximum`` would be a ufunc call on them at every iteration of the outer
    loop, and an int64); an array count gets ``np.maximum``."""
    if isinstance(count, Tensor) and count.type.weak:
        return (count + abs(count)) // 2  # exact on ints, however large
    return np.maximum(count, 0)


class StagedRows(StagedIterable):
    """The rows of a tensor (``for row in X``): ``X[k]`` for ``k`` below ``len(X)``."""

    def __init__(self, tensor: Tensor):
        if not tensor.shape:
            raise GraphBuildError("iteration over a 0-d array (NumPy raises TypeError here too)", user_location())
        self.builder = tensor._builder
        self.tensor = tensor

    def length(self) -> Any:
        return self.tensor.shape[0]

    def item(self, k: Any) -> Any:
        return self.tensor[k]


class StagedNumbers(StagedIterable):
    """A Python list or tuple of numbers of one type zipped with a tensor (``zip(x, [1.0, 2.0])``):
    a constant array indexed by the loop counter. Its items are what eager code iterates: Python
    numbers (weakly typed, so ``x_f32 * w`` stays float32) or NumPy scalars."""

    def __init__(self, builder: GraphBuilder, items: list[Any] | tuple[Any, ...]):
        self.builder = builder
        self.python = not items or not isinstance(items[0], np.generic)
        self.values = Tensor(builder.const(np.asarray(items)), builder)  # once, before the loop

    @staticmethod
    def accepts(items: Any) -> bool:
        """Lists and tuples of Python numbers of one type (ints within int64), or of NumPy
        scalars of one dtype."""
        if not isinstance(items, (list, tuple)):
            return False
        kinds = {type(item) for item in items}
        if len(kinds) > 1 or not (
            kinds <= {bool, int, float, complex} or all(isinstance(i, np.generic) for i in items)
        ):
            return False
        return np.asarray(items).dtype != object

    def length(self) -> Any:
        return self.values.shape[0]

    def item(self, k: Any) -> Any:
        value = self.values[k]
        return python_number(value) if self.python else value


class StagedEnumerate(StagedIterable):
    def __init__(self, inner: StagedIterable, start: Any):
        self.builder = inner.builder
        self.inner, self.start = inner, start

    def length(self) -> Any:
        return self.inner.length()

    def item(self, k: Any) -> Any:
        return (_as_python_int(self.builder, self.start + k), self.inner.item(k))


class StagedZip(StagedIterable):
    def __init__(self, parts: list[StagedIterable]):
        self.builder = parts[0].builder
        self.parts = parts

    def length(self) -> Any:
        lengths = [p.length() for p in self.parts]
        shortest = lengths[0]
        for n in lengths[1:]:
            shortest = min(shortest, n) if isinstance(shortest, int) and isinstance(n, int) else np.minimum(shortest, n)
        return shortest

    def item(self, k: Any) -> Any:
        return tuple(p.item(k) for p in self.parts)


def _as_python_int(builder: GraphBuilder, value: Any) -> Any:
    """An index as a Python int, as eager code sees it (it promotes weakly: ``x_f32 * i`` is f32)."""
    if not isinstance(value, Tensor) or value.type.weak:
        return value
    if value.dtype != np.int64:
        value = value.astype(np.int64)
    return python_number(value)


def staged(iterable: Any) -> StagedIterable | None:
    """The staged form of ``iterable`` if iterating it needs the graph, else None."""
    if isinstance(iterable, StagedIterable):
        return iterable
    if isinstance(iterable, Tensor):
        return StagedRows(iterable)
    return None


# --- what converted code calls -------------------------------------------------------------------
def _shadowed(name: str, builtin: Any) -> Any:
    """What ``name`` means in the user's code calling a loop helper, when it is not the builtin
    (a module's own ``range``); None when it is the builtin."""
    frame = user_frame()
    if frame is None:
        return None
    for scope in (frame.f_locals, frame.f_globals):
        if name in scope:
            return None if scope[name] is builtin else scope[name]
    return None


def for_range(*args: Any) -> Any:
    """``range(...)`` as a for-loop iterable: the builtin for Python ints, staged for a tensor."""
    shadowing = _shadowed("range", builtins.range)
    if shadowing is not None:
        return shadowing(*args)  # the user's own ``range``: called, and its result iterated
    builder = current_builder()
    if builder is not None and any(isinstance(a, SymExpr) for a in args):
        # ``range(len(x))`` in a graph serving many lengths: the bound is read when the graph runs.
        args = tuple(size_number(builder, a) if isinstance(a, SymExpr) else a for a in args)
    tensors = [a for a in args if isinstance(a, Tensor)]
    if not tensors:
        return range(*args)
    if not 1 <= len(args) <= 3:
        raise TypeError(f"range expected at most 3 arguments, got {len(args)}")
    for a in tensors:
        if a.shape != () or a.dtype.kind not in "iu":
            message = f"range() needs integer bounds, got a tensor {a.type} (NumPy and Python raise TypeError here too)"
            raise build_error(TypeError(message), message, user_location(2))
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) == 3 else 1)
    if isinstance(step, int) and step == 0:
        raise ValueError("range() arg 3 must not be zero")
    return StagedRange(tensors[0]._builder, start, stop, step)


def for_enumerate(*args: Any, **kwargs: Any) -> Any:
    """``enumerate(...)`` as a for-loop iterable (staged over a tensor or a staged range)."""
    shadowing = _shadowed("enumerate", builtins.enumerate)
    if shadowing is not None:
        return shadowing(*args, **kwargs)
    return _enumerate(*args, **kwargs)


def _enumerate(iterable: Any, start: Any = 0) -> Any:
    inner = staged(iterable)
    if inner is None:
        return enumerate(iterable, start)
    return StagedEnumerate(inner, start)


def for_zip(*iterables: Any, **kwargs: Any) -> Any:
    """``zip(...)`` as a for-loop iterable; staged when any part is a tensor or staged range."""
    shadowing = _shadowed("zip", builtins.zip)
    if shadowing is not None:
        return shadowing(*iterables, **kwargs)
    return _zip(*iterables, **kwargs)


def _zip(*iterables: Any, strict: bool = False) -> Any:
    parts = [staged(it) for it in iterables]
    if all(p is None for p in parts):
        return zip(*iterables, strict=strict)
    builder = next(p for p in parts if p is not None).builder
    resolved = []
    for it, part in zip(iterables, parts):
        if part is None and isinstance(it, range):
            part = StagedRange(builder, it.start, it.stop, it.step)
        if part is None and StagedNumbers.accepts(it):
            part = StagedNumbers(builder, it)
        if part is None:
            raise GraphBuildError(
                f"zip() of a tensor with a Python {type(it).__name__} cannot be staged: the graph "
                "cannot index a Python object with a tensor counter (only lists and tuples of "
                "numbers of one type can be)",
                user_location(2),
                "convert it to an array first (np.asarray(...)) or zip tensors only",
            )
        resolved.append(part)
    if strict:
        raise GraphBuildError("zip(strict=True) over tensors is not supported", user_location(2))
    return StagedZip(resolved)


def convert_for(
    iterable: Any,
    loop_body: Callable[[Any], None],
    get_state: Callable[[], tuple],
    set_state: Callable[[tuple], None],
    names: tuple[str, ...],
    carried: tuple[str, ...],
) -> None:
    """Run a converted ``for``: a Python loop over a Python iterable, a ``while_loop`` over a tensor.

    Args:
        iterable: what the loop iterates (possibly a ``StagedIterable`` from ``for_range``...).
        loop_body: runs one iteration given the item (it assigns the loop target itself).
        get_state, set_state, names, carried: as for ``convert_while_loop``.
    """
    # A lowered ``break`` wraps the iterable; its flag joins the condition of a staged loop.
    stoppable = iterable if isinstance(iterable, StoppableIterable) else None
    inner = stoppable.iterable if stoppable is not None else iterable
    loc = user_location(2)
    state = LoopState(names, carried, get_state, set_state)
    sequence = staged(inner)
    if sequence is not None:
        length = sequence.length()
        if not isinstance(length, int) or length > UNROLL_ROWS_AT_MOST:
            _stage_for(sequence, stoppable, loop_body, state, loc)
        elif _rows_roll(length, loc):
            _stage_rolled(sequence, stoppable, loop_body, state, loc)
        else:
            for item in _unrolled(sequence, length, stoppable):
                loop_body(item)
        return
    sequence = _rolled_range(inner, loc)
    if sequence is not None:
        _stage_rolled(sequence, stoppable, loop_body, state, loc)
        return
    for item in iterable:
        loop_body(item)


def _rows_roll(length: int, loc: SourceLocation | None) -> bool:
    """Does a loop over a staged sequence of static ``length`` roll (``rolling.py``)?"""
    policy = current_policy()
    return policy is None or policy.should_roll_rows(length, loc)


def _unrolled(sequence: StagedIterable, length: int, stoppable: StoppableIterable | None) -> Iterable[Any]:
    """The items of ``sequence`` one by one while the graph is built, as eager Python iterates
    them (``X[0]``, ``X[1]``...), stopping at a lowered ``break``."""
    items = (sequence.item(k) for k in range(length))
    if stoppable is None:
        return items
    return StoppableIterable(items, stoppable.stop_fn, stoppable.hold_at_break)


def _rolled_range(iterable: Any, loc: SourceLocation | None) -> StagedRange | None:
    """A Python ``range`` the loop rolls into a ``while_loop`` (``rolling.py``), else None."""
    builder = current_builder()
    policy = current_policy()
    if type(iterable) is not range or builder is None or policy is None:
        return None
    if not policy.should_roll(len(iterable), loc):
        return None
    return StagedRange(builder, iterable.start, iterable.stop, iterable.step)


def _stage_rolled(sequence: StagedIterable, stoppable, loop_body, state: LoopState, loc: SourceLocation | None) -> None:
    """Stage a rolled Python-range loop; an exception leaving it blames it (``rolling.py``)."""
    try:
        _stage_for(sequence, stoppable, loop_body, state, loc)
    except Exception:
        policy = current_policy()
        if policy is not None and loc is not None:
            policy.blame(loc)
        raise


def _stage_for(
    sequence: StagedIterable,
    stoppable: StoppableIterable | None,
    loop_body: Callable[[Any], None],
    state: LoopState,
    loc: SourceLocation | None,
) -> None:
    """Stage ``for item in sequence: loop_body(item)`` as one ``while_loop`` over a counter."""
    builder = sequence.builder
    length = sequence.length()
    counter: list[Any] = [wrap_result(builder, builder.const(0))]

    def condition() -> Any:
        if stoppable is None:
            return counter[0] < length
        return convert_logical_and(lambda: counter[0] < length, stoppable.not_stopped)

    def get_all() -> tuple:
        return tuple(state.get()) + (counter[0],)

    def set_all(values: tuple) -> None:
        state.set(values[:-1])
        counter[0] = values[-1]

    def body() -> None:
        k = counter[0]
        loop_body(sequence.item(k))
        counter[0] = k + 1

    with_counter = LoopState(state.names + (_COUNTER,), state.carried + (_COUNTER,), get_all, set_all)
    stage_while_loop(builder, condition, body, with_counter, loc)


def python_bool(pred: Any, construct: str) -> Any:
    """The condition of an if/while the converters left in Python because its body has ``construct``.

    Raises:
        UnsupportedSyntaxError: ``pred`` is a tensor, so the statement would need a graph op.
    """
    if isinstance(pred, Tensor):
        raise UnsupportedSyntaxError(
            f"this condition is a tensor, so the statement must become a graph op, but its body has {construct}",
            user_location(2),
            "move it out of the tensor-dependent block, or use to_static(fallback=True) to run eagerly",
        )
    return pred


def python_iterable(iterable: Any, construct: str) -> Any:
    """The iterable of a for loop left in Python because its body has ``construct``."""
    inner = iterable.iterable if isinstance(iterable, StoppableIterable) else iterable
    if staged(inner) is not None:
        raise UnsupportedSyntaxError(
            f"this loop iterates a tensor, so it must become a graph op, but its body has {construct}",
            user_location(2),
            "move it out of the loop, or use to_static(fallback=True) to run eagerly",
        )
    return iterable


class StoppableIterable:
    """An iterable whose ``for`` loop ends once ``stop_fn()`` is true (the lowered ``break``).

    The flag is checked before each next element, so the loop variable is not rebound after the
    ``break``. A tensor flag cannot be tested by Python: iteration then goes on (the loop body's
    own guard makes the remaining iterations change nothing), and with ``hold_at_break`` each
    element is ``cond(flag, previous element, element)``, so the loop variable keeps the element
    of the ``break``. The control-flow runtime unwraps this object for a tensor loop and ands
    ``not_stopped()`` into its condition.

    Attributes:
        iterable: what the user's ``for`` iterates over.
        stop_fn: returns the break flag (a Python bool or a 0-d bool tensor).
        hold_at_break: the loop variable is used after the loop.
    """

    __slots__ = ("iterable", "stop_fn", "hold_at_break")

    def __init__(self, iterable: Any, stop_fn: Callable[[], Any], hold_at_break: bool = False):
        self.iterable = iterable
        self.stop_fn = stop_fn
        self.hold_at_break = hold_at_break

    def not_stopped(self) -> Any:
        """``not stop_fn()``: what a tensor loop ands into its condition (a bool or 0-d tensor)."""
        return convert_logical_not(self.stop_fn())

    def __iter__(self):
        previous = _NOTHING
        unbounded = not hasattr(self.iterable, "__len__")  # an iterator: perhaps endless
        staged = 0
        for item in self.iterable:
            stop = self.stop_fn()
            if not isinstance(stop, Tensor):
                if stop:
                    return
            else:
                staged += 1
                if unbounded and staged > TENSOR_BREAK_ITERATIONS_AT_MOST:
                    raise _endless_loop_error()
                if self.hold_at_break and previous is not _NOTHING:
                    item = cond(stop, lambda held=previous: held, lambda current=item: current)
            previous = item
            yield item


# How many iterations of a Python iterator a ``for`` with a tensor ``break`` stages before it is
# refused: Python cannot tell when such a loop stops (``for i in itertools.count()``).
TENSOR_BREAK_ITERATIONS_AT_MOST = 10_000


def _endless_loop_error() -> GraphBuildError:
    return GraphBuildError(
        f"this 'for' over a Python iterator stops at a 'break' whose condition is a tensor, so Python "
        f"cannot see when it ends; {TENSOR_BREAK_ITERATIONS_AT_MOST:,} iterations were staged",
        user_location(3),
        "loop over a range with a bound (for i in range(n)) or write a while loop on the condition",
    )


_NOTHING = object()


def iterate_until(iterable: Any, stop_fn: Callable[[], Any], hold_at_break: bool = False) -> StoppableIterable:
    """``for x in iterate_until(items, lambda: break_)``: a ``for`` that stops at the break flag.

    Args:
        iterable: the loop's iterable.
        stop_fn: returns the break flag.
        hold_at_break: the loop variable is used after the loop, so it must keep the element of
            the ``break`` even where the flag is a tensor.
    """
    return StoppableIterable(iterable, stop_fn, hold_at_break)
