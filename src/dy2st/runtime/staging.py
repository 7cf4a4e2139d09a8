"""Staging: run a converted function on symbolic tensors and record the graph it builds."""

from __future__ import annotations

import dis
import functools
import inspect
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dy2st.errors import Dy2stRuntimeError, GraphBuildError, SourceLocation, raising_user_location, runtime_error
from dy2st.ir.core import Graph, Op, Value
from dy2st.ir.opcodes import (
    CALLER_ARRAY_FROM_OUTPUT,
    KIND_FROM_OUTPUT,
    NUMPY_SCALAR,
    RESULT_KINDS,
    RETURNS_CALLER_ARRAY,
    WRITES_BACK,
    ZERO_D_ARRAY,
)
from dy2st.ir.opdefs import get_op
from dy2st.ir.symbolic import (
    MIN_SYMBOLIC_SIZE,
    DataDependentSize,
    Guard,
    Symbol,
    SymbolicSizeNeeded,
    SymExpr,
    attempt_guards,
    staging_user_code,
)
from dy2st.ir.types import TensorType, type_of_array, type_of_python_scalar
from dy2st.runtime.captures import MISSING, GlobalSource, ObjectSource, ReadSnapshot, capture_value
from dy2st.runtime.control_flow.rolling import attempts, rolling
from dy2st.runtime.control_flow.values import PythonNumber, size_number
from dy2st.runtime.pytree import (
    PYTHON_NUMBER_LEAF,
    Identity,
    TreeDef,
    constant_key,
    flatten,
    is_array,
    is_array_or_number_input,
    is_number_input,
    unflatten,
)
from dy2st.runtime.recursion import watch_recursion
from dy2st.staging.builder import FORMAT_MARK, Decision, GraphBuilder
from dy2st.staging.tensor import Tensor, as_value


@dataclass(frozen=True)
class InPlaceUpdate:
    """An input (argument leaf or captured array) the function updates in place.

    Attributes:
        index: the input's position among the graph's inputs then captures.
        name: how the user names it (``x``, ``pair[0]``, a global's name).
        is_argument: an argument leaf, not an array read from a global, closure or attribute.
        loc: where the first update is, when every call runs it before anything the caller could
            see (``_runs_before_any_effect``); None otherwise (the first update is under a tensor
            condition or in a loop, which a call may skip, or comes after a print or another
            input's update), and the call then runs the Python function to fail where NumPy does.
    """

    index: int
    name: str
    is_argument: bool
    loc: SourceLocation | None

    def read_only_error(self) -> Dy2stRuntimeError:
        """What NumPy raises at the update when the array is read-only, naming the array."""
        what = "argument" if self.is_argument else "array"
        return runtime_error(
            ValueError("output array is read-only"),
            f"the {what} '{self.name}' is updated in place here, but the array passed for it is read-only "
            "(its flags.writeable is False): ValueError: output array is read-only",
            self.loc,
            note=f"pass a writable array (a copy), or assign to a new array ({self.name} = {self.name} + ...) "
            "instead of updating it in place",
        )


@dataclass
class Program:
    """A staged graph plus what it takes to call it.

    Attributes:
        graph: the graph; inputs are the array leaves of the arguments, then the captures.
        output_treedef: the structure of the function's result (array leaves are graph outputs).
        capture_sources: where each capture is read from at every call.
        guards: (source, value) of Python values read from globals; a change rebuilds the graph.
        writebacks: output index -> argument index, for arrays the function updates in place.
        num_results: how many leading graph outputs belong to the function's result.
        in_place_updates: the inputs the function updates in place, one per written input.
    """

    graph: Graph
    output_treedef: TreeDef
    capture_sources: list[Any]
    guards: list[tuple[Any, Any]]
    writebacks: dict[int, int] = field(default_factory=dict)
    num_results: int = 0
    in_place_updates: list[InPlaceUpdate] = field(default_factory=list)
    symbols: dict[Symbol, list[tuple[int, int]]] = field(default_factory=dict)
    size_guards: list[Guard] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)  # tracing mode: see ``trace``
    decisions_start: int = 0  # the output index of the first decision's value

    @property
    def is_dynamic(self) -> bool:
        """Does the graph have argument dimensions of symbolic size (it serves many shapes)?"""
        return bool(self.symbols)

    def sizes_fit(self, leaves: Sequence[Any]) -> bool:
        """Can a call with these argument array leaves run this graph: static dimensions equal,
        each symbol's dimensions equal to each other and at least ``MIN_SYMBOLIC_SIZE``, and every
        decision the build made about symbolic sizes (``size_guards``) true for them?"""
        inputs = self.graph.inputs
        if len(leaves) != len(inputs):
            return False
        for leaf, value in zip(leaves, inputs):
            if is_number_input(leaf):  # its type is in the cache key
                continue
            shape = value.type.shape
            if leaf.ndim != len(shape) or leaf.dtype != value.type.exact_dtype:
                return False
            if any(type(d) is int and d != n for d, n in zip(shape, leaf.shape)):
                return False
        sizes = {}
        for symbol, places in self.symbols.items():
            size = leaves[places[0][0]].shape[places[0][1]]
            if size < MIN_SYMBOLIC_SIZE or any(leaves[i].shape[k] != size for i, k in places[1:]):
                return False
            sizes[symbol] = size
        return all(guard.holds(sizes) for guard in self.size_guards)

    def captures_match(self, captured: list[Any]) -> bool:
        """Do the arrays read from globals now still have the types the graph was built for?"""
        for array, value in zip(captured, self.graph.captures):
            if (
                not isinstance(array, np.ndarray)
                or array.shape != value.type.shape
                or array.dtype != value.type.exact_dtype  # byte order too: a graph bakes it in
            ):
                return False
        return True

    def __post_init__(self) -> None:
        # The key of each guarded value, computed once: guards_hold runs at every call.
        keys = [(source, _guard_key(value)) for source, value in self.guards if _still_guarded(value)]
        # Module globals compared by identity (functions, classes, generators): the fast call
        # checks these inline (`ns.get(name) is G`), about 20 times cheaper than a general guard.
        self.global_identity_guards = [
            (source, _identical_object(key)) for source, key in keys if _is_global_identity_guard(source, key)
        ]
        self._other_guard_keys = [(s, key) for s, key in keys if not _is_global_identity_guard(s, key)]
        self._guard_keys = keys
        self._written_inputs = sorted(set(self.writebacks.values()))

    def runs_eagerly(self, inputs: Sequence[Any]) -> bool:
        """Must this call run the Python function rather than the graph?

        Only graphs that update inputs in place ask. Inputs that overlap (``inputs_overlap``) run
        the Python function. A read-only input whose first update every call runs before
        anything visible raises NumPy's ``ValueError`` at that update's line, before anything
        runs (the graph itself would only fail when writing it back, after running everything
        else); any other read-only updated input runs the Python function, which raises where
        and if NumPy does (see ``InPlaceUpdate.loc``).
        """
        if self.inputs_overlap(inputs):
            return True
        for update in self.in_place_updates:
            if not inputs[update.index].flags.writeable:
                if update.loc is None:
                    return True
                raise update.read_only_error()
        return False

    def inputs_overlap(self, inputs: Sequence[Any]) -> bool:
        """Does an input the graph updates in place share memory with another input?

        The graph treats its inputs as independent arrays, as they are in every call but one
        like ``f(a, a)``, ``f(a, a[1:])`` or ``f(W)`` of a function that also reads the global
        ``W``: there a write through one name must be seen through the other, and the caller runs
        the Python function instead. ``np.may_share_memory`` compares memory bounds only, so it
        costs about a microsecond per pair; a false "may overlap" only costs speed. Before it: a
        Python number shares no memory, and neither do two distinct arrays that each own theirs
        (the common call: fresh arrays), which takes a few attribute reads.
        """
        for written in self._written_inputs:
            target = inputs[written]
            owner = target.base is None and target.flags.owndata
            for index, other in enumerate(inputs):
                if index == written or type(other) is not np.ndarray:
                    continue  # a Python or NumPy scalar: a copy, never a view
                if owner and other is not target and other.base is None and other.flags.owndata:
                    continue
                if np.may_share_memory(target, other):
                    return True
        return False

    @property
    def has_other_guards(self) -> bool:
        return bool(self._other_guard_keys)

    def guards_hold(self) -> bool:
        """Is every Python value the graph baked in still what the graph was built with?"""
        return _keys_hold(self._guard_keys)

    def why_not_usable(self, captured: list[Any]) -> str | None:
        """Why this graph cannot serve a call whose captured arrays are ``captured`` (the name of
        the global, closure or attribute that changed), or None when it can."""
        for source, array, value in zip(self.capture_sources, captured, self.graph.captures):
            if (
                not isinstance(array, np.ndarray)
                or array.shape != value.type.shape
                or array.dtype != value.type.exact_dtype
            ):
                return f"the array {source.name!r} now has another type"
        for source, key in self._guard_keys:
            if constant_key(source.read()) != key:
                return f"the value of {source.name!r} changed"
        return None

    def other_guards_hold(self) -> bool:
        """``guards_hold`` without the ``global_identity_guards``, which the fast call checks."""
        return _keys_hold(self._other_guard_keys)


def _keys_hold(keys: list[tuple[Any, tuple[Any, ...]]]) -> bool:
    return all(constant_key(source.read()) == key for source, key in keys)


def _identical_object(key: tuple[Any, ...]) -> Any:
    """The object a guard key compares by identity (a class, or an ``Identity``), else MISSING."""
    if len(key) == 2 and isinstance(key[1], Identity):
        return key[1].obj
    if len(key) == 2 and isinstance(key[1], type):
        return key[1]
    return MISSING


def _is_global_identity_guard(source: Any, key: tuple[Any, ...]) -> bool:
    return type(source) is GlobalSource and _identical_object(key) is not MISSING


def _still_guarded(value: Any) -> bool:
    return not (isinstance(value, ReadSnapshot) and value.changed())


def _guard_key(value: Any) -> tuple[Any, ...]:
    return value.key if isinstance(value, ReadSnapshot) else constant_key(value)


def is_output_leaf(x: Any) -> bool:
    return isinstance(x, Tensor) or is_array(x)


def trace(
    fn,
    signature: inspect.Signature,
    arguments: dict[str, Any],
    name: str,
    dynamic: frozenset[tuple[int, int]] = frozenset(),
    concrete: bool = False,
    numbers: frozenset[str] = frozenset(),
) -> Program:
    """Stage ``fn`` (a converted function) on the bound ``arguments``.

    ``dynamic`` lists the (array leaf, axis) pairs whose sizes get symbols instead of the call's
    sizes (``symbolic_input_types``). ``numbers``: the parameters whose Python numbers
    (``pytree.is_number_input``) are graph inputs, so that one graph serves every value; by
    default none: every Python number is a constant of the graph.

    Loops over a Python ``range`` are rolled into ``while_loop`` ops where they can be; a build
    that fails with a loop rolled starts again with it unrolled (``control_flow/rolling.py``).
    A build that needs a symbolic size as a number (``SymbolicSizeNeeded``) is left to the
    caller, which builds again with those sizes static.

    ``concrete``: tracing mode (``dy2st.trace``): ``fn`` is the original function, run on tensors
    that also hold the values computed from the arguments' real values; each Python decision it
    takes on a tensor is recorded and its value becomes an extra output (``Program.decisions``).
    """
    for policy in attempts():
        try:
            # Each attempt makes symbols of its own: a failed one's guards are dropped.
            with rolling(policy), attempt_guards(), staging_user_code():
                program = _trace_once(fn, signature, arguments, name, dynamic, concrete, numbers)
        except Exception as error:
            if symbolic_size_needed(error) is not None:
                raise
            if not policy.unroll_after(error):
                if isinstance(error, DataDependentSize):
                    raise data_dependent_size_error(error) from None
                raise
            continue
        program.graph.notes = [str(decision) for decision in policy.decisions.values()]
        return program
    raise AssertionError("unreachable: the last attempt unrolls every loop")


def data_dependent_size_error(error: DataDependentSize) -> GraphBuildError:
    """The user's error for a size that depends on the data, needed while the graph is built."""
    return GraphBuildError(
        f"a size that depends on the values in the arrays ({', '.join(sorted(s.name for s in error.symbols))}) "
        f"is needed while the graph is built ({error.why}); it is known only when the graph runs",
        raising_user_location(error),
        "the length of x[mask], np.nonzero, np.unique or x[:n] with a tensor n is read when the graph runs: "
        "compare len(x) (a number computed then) rather than x.shape[0], or keep the count a tensor "
        "(np.count_nonzero(mask))",
    )


def symbolic_size_needed(error: BaseException | None) -> SymbolicSizeNeeded | None:
    """The ``SymbolicSizeNeeded`` behind ``error`` (itself, or its cause or context), if any."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, SymbolicSizeNeeded):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def symbolic_input_types(
    leaves: Sequence[Any], dynamic: frozenset[tuple[int, int]]
) -> tuple[list[TensorType], dict[Symbol, list[tuple[int, int]]]]:
    """The input types of array ``leaves`` with the ``dynamic`` (leaf, axis) sizes symbolic (a
    Python number leaf: its weak 0-d type).

    Dynamic dimensions of equal size in this call share one symbol ("duck sizing"), so that
    ``x + y`` of two arguments of one length needs no check; a later call where they differ
    does not fit the graph (``Program.sizes_fit``) and builds another. Sizes below
    ``MIN_SYMBOLIC_SIZE`` stay static.
    """
    by_size: dict[int, Symbol] = {}
    places: dict[Symbol, list[tuple[int, int]]] = {}
    types = []
    for index, leaf in enumerate(leaves):
        if is_number_input(leaf):
            types.append(type_of_python_scalar(leaf))
            continue
        base = type_of_array(leaf)
        shape: list[Any] = list(base.shape)
        for axis, size in enumerate(leaf.shape):
            if (index, axis) in dynamic and size >= MIN_SYMBOLIC_SIZE:
                symbol = by_size.get(size)
                if symbol is None:
                    symbol = by_size[size] = Symbol(f"n{len(by_size)}", size)
                places.setdefault(symbol, []).append((index, axis))
                shape[axis] = SymExpr.of(symbol)
        types.append(TensorType(tuple(shape), base.dtype, byteorder=base.byteorder))
    return types, places


def flatten_argument(value: Any, leaves: list[Any], numbers_are_inputs: bool, weak_objects: bool = False) -> TreeDef:
    """An argument's structure, appending its leaves to ``leaves``: its arrays, and its Python
    numbers too when ``numbers_are_inputs``."""
    is_leaf = is_array_or_number_input if numbers_are_inputs else is_array
    return flatten(value, leaves, is_leaf, weak_objects, typed_numbers=numbers_are_inputs)


def _flattened(value: Any, numbers_are_inputs: bool) -> tuple[TreeDef, list[Any]]:
    """``value``'s structure and its leaves."""
    leaves: list[Any] = []
    return flatten_argument(value, leaves, numbers_are_inputs), leaves


def _trace_once(
    fn,
    signature: inspect.Signature,
    arguments: dict[str, Any],
    name: str,
    dynamic: frozenset[tuple[int, int]],
    concrete: bool,
    numbers: frozenset[str],
) -> Program:
    builder = GraphBuilder(name)
    builder.concrete = {} if concrete else None
    with builder:
        inputs: list[Tensor] = []
        symbolic_arguments = {}
        trees = {param: _flattened(value, param in numbers) for param, value in arguments.items()}
        input_types, symbols = symbolic_input_types([leaf for _, leaves in trees.values() for leaf in leaves], dynamic)
        types_in_order = iter(input_types)
        for param, (treedef, leaves) in trees.items():
            tensors: list[Tensor] = []
            for leaf, path in zip(leaves, treedef.leaf_paths(param)):
                placeholder = builder.add_input(next(types_in_order), path, leaf)
                if is_number_input(leaf):
                    # Immutable like the number: ``lr *= 0.5`` rebinds the name, as eagerly.
                    tensors.append(PythonNumber(placeholder, builder, scalar=True))
                    continue
                tensor = Tensor(placeholder, builder, scalar=isinstance(leaf, np.generic))
                builder.caller_arrays[id(tensor)] = tensor
                tensors.append(tensor)
            inputs.extend(tensors)
            # Objects (``self`` of a method...) are read through proxies so that arrays in their
            # attributes become captures read by reference, like global arrays.
            hook = functools.partial(_object_argument, param)
            symbolic_arguments[param] = unflatten(treedef, tensors, hook)
        # Where a symbolic size used as a number is read: the first argument axis that has it.
        builder.symbol_places = {s: (builder.graph.body.args[i], k) for s, [(i, k), *_] in symbols.items()}
        bound = inspect.BoundArguments(signature, symbolic_arguments)
        # Watched like the calls inside it, so that recursion back into fn is seen from its first call.
        try:
            result = _sizes_as_numbers(builder, watch_recursion(fn, builder)(*bound.args, **bound.kwargs))
        except Exception as error:
            if getattr(error, "numpy_error", False) and _has_effects(builder, inputs):
                # Eager code raises there after updating arguments or printing: only running the
                # Python function leaves what it leaves (``StaticFunction._call_slow``).
                error.effects_before = True  # type: ignore[attr-defined]
            raise
        _refuse_formatted_strings(result)

        out_leaves: list = []
        output_treedef = _tag_python_numbers(flatten(result, out_leaves, is_output_leaf), iter(out_leaves))
        outputs = _output_values(builder, out_leaves, fn)
        num_results = len(outputs)
        writebacks = {}
        first_updates: dict[int, Op | None] = {}
        captures = list(builder.capture_tensors.values())
        for arg_index, tensor in enumerate(inputs + captures):
            argument = builder.graph.body.args[arg_index]
            if tensor._value is not argument:
                writebacks[len(outputs)] = arg_index
                outputs.append(tensor._value)
                first_updates[arg_index] = _first_update(argument, tensor._value)
        kinds = _zero_d_result_kinds(out_leaves, outputs)
        caller_arrays = _caller_arrays(builder, out_leaves, inputs + captures, outputs)
        attrs: dict[str, Any] = {RESULT_KINDS: kinds} if any(kinds) else {}
        if writebacks:  # passes may then update those arguments in place, as the eager function does
            attrs[WRITES_BACK] = tuple(writebacks.get(i) for i in range(len(outputs)))
        if any(index is not None for index in caller_arrays):
            attrs[RETURNS_CALLER_ARRAY] = caller_arrays
        decisions_start = len(outputs)
        outputs.extend(decision.value for decision in builder.decisions)  # checked after each run
        graph = builder.finish(outputs, attrs=attrs or None)
    updates = [
        InPlaceUpdate(
            index,
            graph.body.args[index].name_hint or "?",
            index < len(inputs),
            first.loc if first is not None and _runs_before_any_effect(first, graph, first_updates.values()) else None,
        )
        for index, first in first_updates.items()
    ]
    program = Program(
        graph, output_treedef, list(builder.captures), builder.guards, writebacks, num_results, updates, symbols
    )
    program.decisions = list(builder.decisions)
    program.decisions_start = decisions_start
    return program


def _has_effects(builder: GraphBuilder, inputs: list[Tensor]) -> bool:
    """Has the function staged so far updated an input or a captured array, or staged an op with
    a side effect (a print, a random draw)?"""
    arguments = builder.graph.body.args
    updated = [t for t in (*inputs, *builder.capture_tensors.values()) if t._value not in arguments]
    return bool(updated) or any(get_op(inner.name).side_effect for op in builder.graph.body.ops for inner in op.walk())


def _caller_arrays(builder: GraphBuilder, leaves: list[Any], arguments: list[Tensor], outputs: list[Value]) -> tuple:
    """For each result leaf, the index of the argument or capture that is the very object eager
    code returns there (``return C`` after ``C[i] = ...``, ``return W`` of a global): the tracer
    keeps one ``Tensor`` per array object, so identity here is identity there. A leaf naming one
    of several objects by a value known when the graph runs (``GraphBuilder.rotated_arrays``)
    gets ``(CALLER_ARRAY_FROM_OUTPUT, j, candidates)``, that value appended to ``outputs`` as
    output ``j``."""
    index_of = {id(tensor): index for index, tensor in enumerate(arguments)}
    entries: list[Any] = []
    for leaf in leaves:
        rotated = builder.rotated_arrays.get(id(leaf))
        if rotated is not None and rotated.tensor is leaf:
            candidates = tuple(index_of.get(id(array)) for array in rotated.named)
            if any(index is not None for index in candidates) and _defined_in(rotated.counter, builder.graph.body):
                entries.append((CALLER_ARRAY_FROM_OUTPUT, len(outputs), candidates))
                outputs.append(rotated.counter)
                continue
        entries.append(index_of.get(id(leaf)) if isinstance(leaf, Tensor) else None)
    return tuple(entries)


def _defined_in(value: Value, block: Any) -> bool:
    """Is ``value`` an argument of ``block`` or the result of one of its own ops?"""
    owner = value.owner
    return owner is block or (isinstance(owner, Op) and owner.parent is block)


def _first_update(argument: Value, final: Value) -> Op | None:
    """The op of the first in-place update of ``argument``, when every call runs it.

    Each update (``x += 1``, ``x[i] = v``, the cast back to ``x``'s dtype) reads the array's
    previous contents as its first operand, so the chain of first operands from the final value
    leads back to the argument. None when it passes a ``cond`` or ``while_loop`` (the update it
    stands for may not run) or leads elsewhere.
    """
    value, first = final, None
    while value is not argument:
        op = value.op
        if op is None or op.regions or not op.operands:
            return None
        first, value = op, op.operands[0]
    return first


def _runs_before_any_effect(update: Op, graph: Graph, first_updates: Iterable[Op | None]) -> bool:
    """Does ``update`` (a top-level op) run before anything the caller could see: a print, an
    assertion, a random draw, or the first update of another input? Only then can a call that
    would fail at ``update`` fail before running the graph and leave what eager code leaves."""
    ops = graph.body.ops
    if update not in ops:
        return False
    position = ops.index(update)
    if any(get_op(inner.name).side_effect for op in ops[:position] for inner in op.walk()):
        return False
    return all(other is update or (other in ops and ops.index(other) > position) for other in first_updates)


def _zero_d_result_kinds(leaves: list[Any], outputs: list[Value]) -> tuple[Any, ...]:
    """The return op's ``RESULT_KINDS``: for each 0-d result, whether eager code returns a NumPy
    scalar or a 0-d array there, or ``(KIND_FROM_OUTPUT, j)`` where a tensor ``if`` or loop
    decided that (its kind flag is appended to ``outputs`` as output ``j``); None for the others
    (Python numbers are rebuilt from the result's structure). The graph's ops may give the other
    kind once optimized (``y * 1.0`` of a 0-d array is a NumPy scalar, simplified to ``y`` an
    array), so the executor converts."""
    kinds: list[Any] = []
    for leaf in leaves:
        if not isinstance(leaf, Tensor) or leaf.type.shape:
            kinds.append(None)
        elif leaf._kind_flag is not None:
            kinds.append((KIND_FROM_OUTPUT, len(outputs)))
            outputs.append(leaf._kind_flag._value)
        elif isinstance(leaf, PythonNumber):
            kinds.append(None)
        else:
            kinds.append({True: NUMPY_SCALAR, False: ZERO_D_ARRAY}.get(leaf._scalar))
    return tuple(kinds)


def _sizes_as_numbers(builder: GraphBuilder, result: Any) -> Any:
    """The result with each symbolic size in it (``return len(x)``) the Python int it is when
    the graph runs."""
    if isinstance(result, SymExpr):
        return size_number(builder, result)
    if type(result) in (tuple, list):
        return type(result)(_sizes_as_numbers(builder, item) for item in result)
    if type(result) is dict:
        return {key: _sizes_as_numbers(builder, item) for key, item in result.items()}
    return result


def _refuse_formatted_strings(result: Any) -> None:
    """A string with a tensor formatted into it (``f"{t}"``) holds a value known only when the
    graph runs: print can show it, a result cannot carry it."""
    if isinstance(result, str) and FORMAT_MARK in result:
        raise GraphBuildError(
            "the function returns a string formatted from a tensor, whose value is only known when the graph runs",
            None,
            "return the tensor and format it after the call (print inside the function works)",
        )
    if isinstance(result, (list, tuple)):
        for item in result:
            _refuse_formatted_strings(item)
    elif isinstance(result, dict):
        for item in result.values():
            _refuse_formatted_strings(item)


def _output_values(builder: GraphBuilder, leaves: list[Any], fn: Any) -> list[Value]:
    """The graph values of the function's result. A result refused here (one that may share
    memory with an array updated since) is refused at the function's ``return``: the function
    has returned, so the innermost user frame would be its caller's."""
    try:
        return [_output_value(builder, leaf) for leaf in leaves]
    except GraphBuildError as error:
        error.loc = _return_location(fn) or error.loc
        raise


def _return_location(fn: Any) -> SourceLocation | None:
    """Where the function returns: the last ``return`` of its code (converted code keeps the
    user's lines), or None."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    found = None
    for instruction in dis.get_instructions(code):
        position = instruction.positions
        if instruction.opname in ("RETURN_VALUE", "RETURN_CONST") and position is not None and position.lineno:
            found = SourceLocation(code.co_filename, position.lineno, position.col_offset)
    return found


def _output_value(builder: GraphBuilder, leaf: Any):
    if isinstance(leaf, Tensor) and leaf._builder is not builder:
        raise GraphBuildError("the function returns a tensor that belongs to another graph")
    return as_value(builder, leaf)


def _object_argument(param: str, obj: Any) -> Any:
    return capture_value(obj, ObjectSource(obj, param))


def _tag_python_numbers(treedef: TreeDef, leaves: Iterator[Any]) -> TreeDef:
    """Mark result leaves that are Python numbers in eager code (a loop counter, a number picked
    by a tensor ``if``): the caller gets them back as Python numbers, not 0-d arrays."""
    return treedef.map_leaves(lambda leaf: PYTHON_NUMBER_LEAF if _python_number_result(next(leaves)) else leaf)


def _python_number_result(leaf: Any) -> bool:
    """A Python number in eager code on every path (a path-decided kind is converted by the
    executor, ``_zero_d_result_kinds``)."""
    return isinstance(leaf, PythonNumber) and leaf._kind_flag is None
