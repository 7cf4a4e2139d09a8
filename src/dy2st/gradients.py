"""``grad``, ``value_and_grad`` and ``vjp``: gradients of converted functions as static graphs.

The function is converted and staged as ``to_static`` does it; ``dy2st.autodiff`` appends the
backward code to the staged graph, which then goes through the same passes (DCE, CSE, fusion,
memory planning) and backend as any graph. Gradient graphs are cached per input signature, like
the graphs of ``to_static``. See docs/autodiff.md.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from inspect import Parameter
from typing import Any, cast

import numpy as np

from dy2st.api import BoundStaticFunction, Converted, StaticFunction, rank_key, to_static
from dy2st.autodiff import differentiate
from dy2st.backend.numba.executor import make_executor, tier_passes
from dy2st.backend.numpy.executor import Executor
from dy2st.backend.numpy.lowering import numpy_passes
from dy2st.errors import DifferentiationError, hide_internal_frames, public_api
from dy2st.fast_call import CHANGED, build_fast_call
from dy2st.ir.core import Graph, Op, Value
from dy2st.ir.emit import Emitter
from dy2st.ir.opcodes import (
    CALLER_ARRAY_FROM_OUTPUT,
    NUMPY_SCALAR,
    RESULT_KINDS,
    RETURNS_CALLER_ARRAY,
    WRITES_BACK,
    ZERO_D_ARRAY,
)
from dy2st.ir.symbolic import numbering_data_dependent_sizes, recording_guards
from dy2st.passes import optimize
from dy2st.runtime.pytree import TreeDef, flatten, unflatten
from dy2st.runtime.staging import Program, flatten_argument

_BUILD_LOCK = threading.RLock()


@dataclass
class _GradientProgram:
    """The gradient graph of one input signature and how to read its outputs."""

    program: Program
    graph: Graph
    executor: Executor | None  # None until the graph is optimized and compiled
    num_outputs: int  # outputs of the forward graph, before the gradients
    argument_trees: list[TreeDef]  # the structure of each differentiated argument
    argument_leaves: list[list[int]]  # the leaf indices of each differentiated argument


# Fast calls a gradient function keeps (one per argument shapes).
_MOST_FAST_CALLS = 256


def _value_and_gradients(
    gradient: _GradientProgram, outputs: tuple[Any, ...], numbers: list[bool]
) -> tuple[Any, list[Any]]:
    """The function's result and the gradient of each differentiated argument, read from the
    gradient graph's outputs; ``numbers``: which arguments were Python floats (their gradients
    are floats)."""
    program = gradient.program
    value = unflatten(program.output_treedef, outputs[: program.num_results])
    flat = iter(outputs[gradient.num_outputs :])
    grads = []
    for tree, indices, number in zip(gradient.argument_trees, gradient.argument_leaves, numbers):
        leaves_of_arg = [next(flat) for _ in indices]
        grads.append(float(leaves_of_arg[0]) if number else unflatten(tree, leaves_of_arg))
    return value, grads


class _Differentiated:
    """What ``grad``, ``value_and_grad`` and ``vjp`` share: the converted function, which
    arguments are differentiated, and the gradient graphs built so far, one per signature."""

    def __init__(self, fun: Callable[..., Any], argnums: int | Sequence[int], checkpoint: bool = False):
        converted = to_static(fun)
        self.checkpoint = checkpoint
        self.static, self.prefix = _unbound(converted)
        self.argnums_given = argnums
        self.argnums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
        if not self.argnums or not all(isinstance(k, int) for k in self.argnums):
            raise TypeError(f"argnums must be an int or a non-empty tuple of ints, got {argnums!r}")
        self._cache: dict[tuple[Any, ...], list[_GradientProgram]] = {}
        # Gradient graphs with symbolic sizes, by the key with shapes reduced to ranks (the
        # converted function's automatic rule: a size that changes between calls is symbolic).
        self._dynamic_cache: dict[tuple[Any, ...], list[_GradientProgram]] = {}
        # Python numbers follow the converted function's rule (a parameter whose number changes
        # between calls becomes a graph input) until a gradient graph fails to build with them
        # as inputs; from then on they are constants of this function's gradient graphs.
        self._numbers_constant = False
        # All-array positional calls, by ``fast_key``: generated calls of their gradient graphs
        # (``fast_call``), as converted functions have.
        self._fast_calls: dict[Any, Callable[[tuple[Any, ...]], Any]] = {}
        functools.update_wrapper(cast(Any, self), self.static.fn)

    @property
    def num_graphs(self) -> int:
        """How many gradient graphs are cached (one per input signature)."""
        return sum(len(v) for v in (*self._cache.values(), *self._dynamic_cache.values()))

    @public_api
    def graph(self, *args: Any, optimize: bool = True, **kwargs: Any) -> Graph:
        """The gradient graph for this input signature: the forward graph with the backward code
        appended, after the optimizing passes unless ``optimize=False``."""
        if not optimize:
            _, arguments, leaves, _ = self._bound((*self.prefix, *args), kwargs)
            return self._staged(arguments, leaves, self._seeded, numbers=self._number_params(arguments)).graph
        return self._compiled(args, kwargs, seeded=self._seeded)[0].graph

    @property
    def backend(self) -> str:
        """The backend the gradient graphs run on (the converted function's)."""
        return self.static.backend

    _seeded = False  # vjp: the output cotangents are inputs of the graph

    def _call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """What ``grad`` and ``value_and_grad`` return for a call: an all-array positional call
        takes its generated fast call once the graph is built (a converted function's call path,
        with the boundary of the public API written out, as in ``StaticFunction.__call__``)."""
        try:
            if not kwargs and len(args) == self.static._positional_arity:
                fast = self._fast_calls.get(self.static._fast_key(args, self.static._number_constants))
                if fast is not None and (result := fast(args)) is not CHANGED:
                    return result
            value, grads = self._run(args, kwargs)
            return self._result(value, grads)
        except Exception as error:
            hide_internal_frames(error)
            raise

    _returns_value = False  # value_and_grad: the function's result comes with the gradient

    def _result(self, value: Any, grads: list[Any]) -> Any:
        """A call's answer: the gradient (a tuple of them for a tuple of argnums), after the
        function's result for ``value_and_grad``."""
        gradient = grads[0] if isinstance(self.argnums_given, int) else tuple(grads)
        return (value, gradient) if self._returns_value else gradient

    def _run(self, args: tuple[Any, ...], kwargs: dict[str, Any], seeds: Sequence[Any] = ()) -> tuple[Any, list[Any]]:
        """The function's result and the gradients of the differentiated arguments."""
        gradient, leaves, captured, numbers = self._compiled(args, kwargs, self._seeded)
        assert gradient.executor is not None
        outputs = gradient.executor.run(*leaves, *seeds, *captured)
        if not seeds and not kwargs and len(leaves) == len(args):
            self._remember_fast_call(gradient, args)
        return _value_and_gradients(gradient, outputs, numbers)

    def _remember_fast_call(self, gradient: _GradientProgram, args: tuple[Any, ...]) -> None:
        """Generate the fast call of ``gradient`` for calls like this one, if every argument is an
        array passed positionally (each one leaf of the graph)."""
        if self.prefix or len(args) != self.static._positional_arity:
            return
        if not all(type(a) is np.ndarray for a in args):
            return
        if len(self._fast_calls) >= _MOST_FAST_CALLS:  # a stream of new shapes: start again
            self._fast_calls.clear()
        executor = gradient.executor
        assert executor is not None
        finish = functools.partial(self._finish, gradient)
        direct = executor if executor.callable_directly else None
        key = self.static._fast_key(args, self.static._number_constants)
        self._fast_calls[key] = build_fast_call(gradient.program, executor.run, len(args), None, None, direct, finish)

    def _finish(self, gradient: _GradientProgram, outputs: tuple[Any, ...]) -> Any:
        value, grads = _value_and_gradients(gradient, outputs, [False] * len(gradient.argument_trees))
        return self._result(value, grads)

    def _compiled(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], seeded: bool
    ) -> tuple[_GradientProgram, list[Any], list[Any], list[bool]]:
        key, arguments, leaves, numbers = self._bound((*self.prefix, *args), kwargs)
        candidates = self._cache.get(key, ())
        if not candidates and not seeded:
            candidates = [c for c in self._dynamic_cache.get(rank_key(key), ()) if c.program.sizes_fit(leaves)]
        for candidate in candidates:
            captured = [source.read() for source in candidate.program.capture_sources]
            if candidate.program.captures_match(captured) and candidate.program.guards_hold():
                return candidate, leaves, captured, numbers
        with _BUILD_LOCK:
            built, leaves = self._build_and_cache(key, arguments, leaves, seeded)
        return built, leaves, [source.read() for source in built.program.capture_sources], numbers

    def _build_and_cache(
        self, key: tuple[Any, ...], arguments: dict[str, Any], leaves: list[Any], seeded: bool
    ) -> tuple[_GradientProgram, list[Any]]:
        """Build the gradient graph and the leaves it takes: with the Python numbers that changed
        between calls as inputs (the converted function's rule), or as constants if that fails;
        with the sizes the rule makes symbolic (not for ``vjp``, whose cotangent inputs have the
        outputs' shapes), or static ones if that fails. Neither ever makes a gradient fail that
        builds without them."""
        if not self._numbers_constant and self.static._notice_changing_numbers(arguments):
            key, leaves = self.static._key_and_leaves(arguments, self._number_params(arguments))
        numbers = self._number_params(arguments)
        try:
            return self._build_with_sizes(key, arguments, leaves, seeded, numbers), leaves
        except Exception:
            if not numbers:
                raise
        self._numbers_constant = True
        key, leaves = self.static._key_and_leaves(arguments, ())
        return self._build_with_sizes(key, arguments, leaves, seeded, frozenset()), leaves

    def _build_with_sizes(
        self, key: tuple[Any, ...], arguments: dict[str, Any], leaves: list[Any], seeded: bool, numbers: frozenset[str]
    ) -> _GradientProgram:
        """Build and cache the gradient graph, with symbolic sizes where the rule asks for them
        and they build."""
        dynamic = frozenset() if seeded else self.static._dynamic_dims(key, leaves)
        if dynamic:
            try:
                built = self._build(arguments, leaves, seeded, dynamic, numbers)
            except Exception:
                pass
            else:
                table, place = (self._dynamic_cache, rank_key(key)) if built.program.is_dynamic else (self._cache, key)
                table.setdefault(place, []).append(built)
                return built
        built = self._build(arguments, leaves, seeded, numbers=numbers)
        self._cache.setdefault(key, []).append(built)
        return built

    def _number_params(self, arguments: dict[str, Any]) -> frozenset[str]:
        """The parameters whose Python numbers are inputs of the gradient graph."""
        return frozenset() if self._numbers_constant else self.static._number_params(arguments)

    def _bound(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any], list[Any], list[bool]]:
        """The cache key, arguments and array leaves of a call (Python floats among the
        differentiated arguments made arrays), and which differentiated arguments were floats."""
        args, numbers = self._floats_as_arrays(args)
        key, arguments, leaves = self.static._bind(args, kwargs, numbers=not self._numbers_constant)
        return key, arguments, leaves, numbers

    def _positions(self) -> list[int]:
        """The differentiated arguments' positions in the unbound function's signature."""
        parameters = list(self.static.signature.parameters.values())
        positions = []
        for k in self.argnums:
            position = k + len(self.prefix) if k >= 0 else len(parameters) + k
            if not len(self.prefix) <= position < len(parameters):
                raise DifferentiationError(f"argnums {self.argnums_given!r}: the function has no argument {k}")
            if parameters[position].kind not in (Parameter.POSITIONAL_ONLY, Parameter.POSITIONAL_OR_KEYWORD):
                raise DifferentiationError(
                    f"argnums {self.argnums_given!r}: argument {k} is not a named positional parameter "
                    f"({parameters[position]})",
                    note="differentiate with respect to named parameters; pass several arrays as a tuple",
                )
            positions.append(position)
        return positions

    def _floats_as_arrays(self, args: tuple[Any, ...]) -> tuple[tuple[Any, ...], list[bool]]:
        """Python floats among the differentiated arguments become float64 scalars (graph inputs,
        not constants the graph is specialised on); their gradients are returned as floats."""
        numbers = []
        listed = list(args)
        for position in self._positions():
            is_number = position < len(listed) and type(listed[position]) is float
            if is_number:
                listed[position] = np.float64(listed[position])
            numbers.append(is_number)
        return tuple(listed), numbers

    def _build(
        self,
        arguments: dict[str, Any],
        leaves: list[Any],
        seeded: bool,
        dynamic: frozenset[tuple[int, int]] = frozenset(),
        numbers: frozenset[str] = frozenset(),
    ) -> _GradientProgram:
        staged = self._staged(arguments, leaves, seeded, dynamic, numbers)
        graph = optimize(staged.graph, passes=[*numpy_passes(), *tier_passes(self.static.backend)])
        staged.graph = graph
        staged.executor = make_executor(graph, staged.program.writebacks, self.static.backend)
        return staged

    def _staged(
        self,
        arguments: dict[str, Any],
        leaves: list[Any],
        seeded: bool,
        dynamic: frozenset[tuple[int, int]] = frozenset(),
        numbers: frozenset[str] = frozenset(),
    ) -> _GradientProgram:
        """The gradient graph before the passes (no executor yet), with the ``dynamic`` (leaf,
        axis) sizes symbolic and the Python numbers of the parameters ``numbers`` inputs; the
        decisions staging and the adjoint rules make about sizes are the program's
        ``size_guards``."""
        with recording_guards() as size_guards, numbering_data_dependent_sizes():
            staged = self._staged_with_guards(arguments, leaves, seeded, dynamic, numbers)
        staged.program.size_guards = list(size_guards)
        return staged

    def _staged_with_guards(
        self,
        arguments: dict[str, Any],
        leaves: list[Any],
        seeded: bool,
        dynamic: frozenset[tuple[int, int]],
        numbers: frozenset[str],
    ) -> _GradientProgram:
        names = list(arguments)
        ranges: dict[str, tuple[TreeDef, list[int]]] = {}
        for name, value in arguments.items():
            start = sum(len(r[1]) for r in ranges.values())
            found: list[Any] = []
            ranges[name] = (flatten_argument(value, found, name in numbers), list(range(start, start + len(found))))
        wrt_names = [names[p] for p in self._positions()]
        for name in wrt_names:
            self._check_differentiable(name, arguments[name])
        program = self.static._stage(arguments, dynamic, numbers)
        graph = program.graph
        _check_outputs(program, self.static.fn, seeded)
        ret = graph.body.ops[-1]
        num_outputs = len(ret.operands)
        float_outputs = [i for i in range(program.num_results) if ret.operands[i].type.dtype.kind == "f"]
        emitter = Emitter(graph.body, ret.loc)
        graph.body.ops.pop()
        if seeded:
            seeds = [_add_input(graph, ret.operands[i].type, f"cotangent_{i}") for i in float_outputs]
            _shift_captures(program, ret, len(seeds))
        else:
            seeds = [emitter.const(np.ones((), ret.operands[i].type.dtype)) for i in float_outputs]
        graph.body.ops.append(ret)
        wrt = [index for name in wrt_names for index in ranges[name][1]]
        grads = differentiate(graph, wrt, float_outputs, seeds, self.checkpoint)
        _return_gradients(ret, grads, [leaves[i] for i in wrt])
        return _GradientProgram(
            program,
            graph,
            None,
            num_outputs,
            [ranges[name][0] for name in wrt_names],
            [ranges[name][1] for name in wrt_names],
        )

    def _check_differentiable(self, name: str, value: Any) -> None:
        found: list[Any] = []
        flatten(value, found)
        if not found:
            raise DifferentiationError(
                f"argument {name!r} of {self.static.fn.__qualname__} holds no array to differentiate "
                f"({type(value).__name__})",
                note="gradients are taken with respect to floating-point arrays, NumPy floats and Python floats",
            )
        for leaf in found:
            if np.asarray(leaf).dtype.kind != "f":
                raise DifferentiationError(
                    f"argument {name!r} of {self.static.fn.__qualname__} has dtype {np.asarray(leaf).dtype}: "
                    "only floating-point arguments have gradients",
                    note="pass the integer argument as a float array, or leave it out of argnums",
                )


def _unbound(converted: Converted) -> tuple[StaticFunction, tuple[Any, ...]]:
    """The StaticFunction under a converted function and the arguments bound in front of it."""
    if isinstance(converted, StaticFunction):
        return converted, ()
    if isinstance(converted, BoundStaticFunction):
        return cast(StaticFunction, converted.static), (converted.instance,)
    raise DifferentiationError(f"cannot differentiate {converted!r}: pass the function itself")


def _check_outputs(program: Program, fn: Callable[..., Any], seeded: bool) -> None:
    if seeded:
        return
    outputs = program.graph.body.ops[-1].operands[: program.num_results]
    if len(outputs) != 1 or outputs[0].type.shape != () or outputs[0].type.dtype.kind != "f":
        shown = ", ".join(str(v.type) for v in outputs) or "no array"
        raise DifferentiationError(
            f"grad of {fn.__qualname__}: the function must return one floating-point scalar, got {shown}",
            note="use dy2st.vjp for functions with other results",
        )


def _shift_captures(program: Program, ret: Op, inputs_added: int) -> None:
    """Inputs were added before the captures: the graph arguments the function updates in place
    or returns (``WRITES_BACK``, ``RETURNS_CALLER_ARRAY``) move up by that many where they are
    captures (a global array the function updates)."""
    num_inputs = program.graph.num_inputs - inputs_added

    def moved(index: Any) -> Any:
        if isinstance(index, tuple) and index[0] == CALLER_ARRAY_FROM_OUTPUT:  # one of several arguments
            return (*index[:2], tuple(moved(candidate) for candidate in index[2]))
        return index + inputs_added if isinstance(index, int) and index >= num_inputs else index

    program.writebacks = {output: moved(argument) for output, argument in program.writebacks.items()}
    for attr in (WRITES_BACK, RETURNS_CALLER_ARRAY):
        if attr in ret.attrs:
            ret.attrs[attr] = tuple(moved(index) for index in ret.attrs[attr])


def _add_input(graph: Graph, type_: Any, name: str) -> Value:
    """A new graph input placed after the existing ones (before the captures)."""
    body = graph.body
    value = Value(type_.strong(), name, body, graph.num_inputs)
    body.args.insert(graph.num_inputs, value)
    graph.num_inputs += 1
    for index, arg in enumerate(body.args):
        arg.index = index
    return value


def _return_gradients(ret: Op, grads: list[Value], leaves: list[Any]) -> None:
    """Append the gradients to the return op, converted to the kind of their argument (a NumPy
    scalar for a NumPy scalar argument, a 0-d array for a 0-d array)."""
    count = len(ret.operands)
    kinds = list(ret.attrs.get(RESULT_KINDS, ()))
    kinds += [None] * (count - len(kinds))
    kinds += [
        (NUMPY_SCALAR if isinstance(leaf, np.generic) else ZERO_D_ARRAY) if np.ndim(leaf) == 0 else None
        for leaf in leaves
    ]
    ret.attrs[RESULT_KINDS] = tuple(kinds)
    if WRITES_BACK in ret.attrs:
        ret.attrs[WRITES_BACK] = (*ret.attrs[WRITES_BACK], *([None] * len(grads)))
    ret.operands.extend(grads)


class GradFunction(_Differentiated):
    """``dy2st.grad(fun)``: called like ``fun``, returns the gradient of its scalar result with
    respect to the arguments ``argnums`` (one gradient, or a tuple for a tuple of argnums)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(args, kwargs)


class ValueAndGradFunction(_Differentiated):
    """``dy2st.value_and_grad(fun)``: returns ``(fun(*args), gradient)``."""

    _returns_value = True

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(args, kwargs)


class _VjpFunction(_Differentiated):
    _seeded = True


@public_api
def grad(fun: Callable[..., Any], argnums: int | Sequence[int] = 0, *, checkpoint: bool = False) -> GradFunction:
    """The gradient of ``fun``, a function returning a floating-point scalar (a 0-d array, a NumPy
    float or a Python float computed from its arrays).

    Args:
        fun: a plain Python function over NumPy arrays (converted as ``to_static`` converts it) or
            a converted one.
        argnums: which positional argument to differentiate (an int), or several (a tuple: the
            gradient is then a tuple). Each must hold floating-point arrays or numbers; a
            gradient has its argument's structure, shape and dtype.
        checkpoint: loops keep only the values each iteration starts from and recompute the
            iteration for its adjoint, instead of keeping every value the adjoint reads: less
            memory for loops over large arrays, more time (docs/autodiff.md).

    Returns:
        A converted function, cached per input signature; ``.graph(*args)`` shows the gradient
        graph.
    """
    return GradFunction(fun, argnums, checkpoint)


@public_api
def value_and_grad(
    fun: Callable[..., Any], argnums: int | Sequence[int] = 0, *, checkpoint: bool = False
) -> ValueAndGradFunction:
    """Like ``grad``, but the function returns ``(fun(*args), gradient)`` from one graph."""
    return ValueAndGradFunction(fun, argnums, checkpoint)


_VJP_FUNCTIONS = "_dy2st_vjp_functions"
"""The attribute of a function that holds its ``vjp`` programs by ``argnums``: ``vjp`` is called
once per step of a training loop, and each call would otherwise convert the function and build
its gradient graph again (milliseconds). The table lives and dies with the function."""


def _vjp_function(fun: Callable[..., Any], positions: int | Sequence[int]) -> _VjpFunction:
    """The ``vjp`` program of ``fun`` for these positions, made once per function where the
    function can hold it (plain functions and converted ones; not bound methods or builtins)."""
    table = getattr(fun, "__dict__", None)
    if inspect.ismethod(fun) or not isinstance(table, dict):  # a method reads its function's table
        return _VjpFunction(fun, positions)
    programs = table.setdefault(_VJP_FUNCTIONS, {})
    key = positions if isinstance(positions, int) else tuple(positions)
    if key not in programs:
        programs[key] = _VjpFunction(fun, positions)
    return programs[key]


@public_api
def vjp(
    fun: Callable[..., Any], *args: Any, argnums: int | Sequence[int] | None = None
) -> tuple[Any, Callable[..., Any]]:
    """``fun(*args)`` and a function from cotangents of its floating-point results to the
    cotangents of the arguments (all positional arguments, or ``argnums``).

    Returns:
        ``(outputs, vjp_fun)``; ``vjp_fun(*cotangents)`` takes one array per floating-point array
        result of ``fun``, in the order of its flattened results, and returns a tuple with one
        cotangent per differentiated argument.
    """
    positions = tuple(range(len(args))) if argnums is None else argnums
    differentiated = _vjp_function(fun, positions)
    outputs = differentiated.static(*differentiated.prefix, *args)

    @public_api
    def vjp_fun(*cotangents: Any) -> tuple[Any, ...]:
        _, grads = differentiated._run(args, {}, [np.asarray(c) for c in cotangents])
        return tuple(grads)

    return outputs, vjp_fun
