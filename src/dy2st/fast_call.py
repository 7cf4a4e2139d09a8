"""The fast call path: one generated function per compiled graph for all-positional calls.

A call passing every parameter positionally, each an ndarray or a Python bool, int or float, is
keyed by the (shape, dtype) of each array, the type of each number the graph takes as an input,
and the (type, value) of each number that is a constant of the graph (a bool, a parameter named
static, an int beyond int64), as on the general path; everything else about the call (how captures
are read and checked, whether guards exist, how outputs are rebuilt) is generated once per
graph, so such a call costs about a microsecond on top of the graph's own work
(docs/performance.md).
"""

from __future__ import annotations

import functools
import inspect
import itertools
import types
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from dy2st.runtime.captures import GlobalSource
from dy2st.runtime.pytree import ANY_LEAF, LEAF, TUPLE, is_number_input, unflatten
from dy2st.runtime.staging import Program

# Returned by a generated fast call when an argument, capture or guard no longer fits its graph.
CHANGED = object()

# Python numbers a fast call takes as arguments: the graph holds their values as constants.
FAST_NUMBERS = (bool, int, float)


def fast_key(args: tuple[Any, ...], constants: tuple[bool, ...]) -> tuple[Any, ...] | None:
    """The fast-path key of positional arguments, two items per argument (one flat tuple: no
    tuple per argument to build and hash, 60 ns of a call of two arrays): the shape and dtype of
    an ndarray; of a Python number, its type where it is a graph input (``is_number_input`` and
    not ``constants[i]``), else (type, value), a float by its bits, followed by None; None for
    anything else."""
    key: list[Any] = []
    for a, constant in zip(args, constants):
        kind = type(a)
        if kind is np.ndarray:
            key += (a.shape, a.dtype)
        elif kind not in FAST_NUMBERS:
            return None
        elif not constant and is_number_input(a):
            key += (kind, None)
        elif kind is float:
            key += (float_constant_key(a), None)
        else:
            key += ((kind, a), None)
    return tuple(key)


def float_constant_key(value: float) -> tuple[Any, ...]:
    """The key of a float the graph holds as a constant: equal only for the same bits. A float
    other than a zero or a NaN is equal only to itself; -0.0 and 0.0, and NaNs, are told apart
    by their bits (``hex()``, 0.25 us, kept off the common call)."""
    return (float, value) if value != 0.0 and value == value else (float, value.hex())


@functools.cache
def key_function(
    arity: int, constants: tuple[bool, ...] | None = None
) -> Callable[[tuple[Any, ...], tuple[bool, ...]], tuple[Any, ...] | None]:
    """``fast_key`` for calls of ``arity`` arguments, generated for the ``constants`` pattern (all
    False when None): arrays and Python numbers are keyed without a loop, as ``fast_key`` keys
    them (130 against 340 ns for two arrays; 0.2 against 1.1 us for nbody's two numbers and three
    arrays); anything else (an int beyond int64 a graph would take as an input, another type)
    takes ``fast_key``. Example, two args, the second a number input::

        def key(args, constants):
            x0, x1, = args
            t0 = type(x0)
            if t0 is ndarray:
                k0, d0 = x0.shape, x0.dtype
            else:
                return fast_key(args, constants)
            t1 = type(x1)
            if t1 is ndarray:
                k1, d1 = x1.shape, x1.dtype
            elif t1 is float:
                k1, d1 = float, None
            elif t1 is int and INT64_MIN <= x1 <= INT64_MAX:
                k1, d1 = int, None
            elif t1 is bool:
                k1, d1 = (bool, x1), None
            else:
                return fast_key(args, constants)
            return (k0, d0, k1, d1, )
    """
    constants = constants if constants is not None else (False,) * arity
    xs = [f"x{i}" for i in range(arity)]
    lines = ["def key(args, constants):"]
    if xs:
        lines.append(f"    {''.join(f'{x}, ' for x in xs)}= args")
    for i, (x, constant) in enumerate(zip(xs, constants)):
        k = f"k{i}, d{i}"
        lines += [f"    t{i} = type({x})", f"    if t{i} is ndarray:", f"        {k} = {x}.shape, {x}.dtype"]
        if constant:  # the graph holds the number's value: keyed by it, a float as float_constant_key
            lines += [
                f"    elif t{i} is float:",
                f"        {k} = ((float, {x}) if {x} != 0.0 and {x} == {x} else (float, {x}.hex())), None",
                f"    elif t{i} is int or t{i} is bool:",
                f"        {k} = (t{i}, {x}), None",
            ]
        else:
            lines += [
                f"    elif t{i} is float:",
                f"        {k} = float, None",
                f"    elif t{i} is int and INT64_MIN <= {x} <= INT64_MAX:",
                f"        {k} = int, None",
                f"    elif t{i} is bool:",
                f"        {k} = (bool, {x}), None",
            ]
        lines += ["    else:", "        return fast_key(args, constants)"]
    lines.append(f"    return ({''.join(f'k{i}, d{i}, ' for i in range(arity))})")
    names: dict[str, Any] = {
        "ndarray": np.ndarray,
        "fast_key": fast_key,
        "INT64_MIN": -(2**63),
        "INT64_MAX": 2**63 - 1,
    }
    exec(compile("\n".join(lines) + "\n", f"<dy2st fast key {arity}>", "exec"), names)
    return cast(Callable[[tuple[Any, ...], tuple[bool, ...]], "tuple[Any, ...] | None"], names["key"])


def positional_arity(signature: inspect.Signature) -> int:
    """How many arguments a call passing every parameter positionally has (-1: no such call,
    because of ``*args``, ``**kwargs`` or keyword-only parameters)."""
    kinds = {inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD}
    if any(p.kind not in kinds for p in signature.parameters.values()):
        return -1
    return len(signature.parameters)


def build_fast_call(
    program: Program,
    run: Callable[..., Any],
    arity: int,
    arrays: tuple[int, ...] | None = None,
    usage: list[int] | None = None,
    executor: Any = None,
    finish: Callable[[tuple[Any, ...]], Any] | None = None,
) -> Callable[[tuple[Any, ...]], Any]:
    """Generate the call of one compiled program for ``arity`` positional arguments, the ones at
    ``arrays`` (all, when None) its inputs (ndarrays, or Python numbers of the types they had when
    it was built) and the others Python numbers its key fixed.

    It is found by its key (``key_function``), which has tested each argument's exact type: an
    ndarray, or the Python number type the graph takes. Everything that does not depend on the
    argument values is baked in: how each capture is read (a module global is one dict lookup),
    the type each capture must still have, whether guards exist, how outputs are returned. The
    function returns ``CHANGED`` when a capture was rebound to an array of another type, a guarded
    Python value changed (a module global compared by identity, such as a function, is checked
    inline), or an array the graph updates in place is read-only or overlaps another input; the
    caller then takes the general path (``Program.runs_eagerly``). ``usage``: the program's
    ``[calls, last use]``, updated at each call it serves (``StaticFunction.cache_info``).
    ``executor``: the executor whose ``run`` is ``run``, when it is ``callable_directly``: the
    call then runs its current ``function`` itself, a Python frame less (``recover`` names the
    user's line when it raises). ``finish``: makes the call's result from all the outputs (a
    gradient graph's value and gradients), instead of the program's results.
    Example, two args, one global::

        def fast_call(args):
            x0, x1 = args
            c0 = ns0.get('W')
            if not isinstance(c0, ndarray) or c0.shape != S0 or (c0.dtype is not D0 and c0.dtype != D0):
                return CHANGED
            outputs = run(x0, x1, c0)
            return outputs[0]
    """
    names = {
        "ndarray": np.ndarray,
        "CHANGED": CHANGED,
        "run": run,
        "unflatten": unflatten,
        "treedef": program.output_treedef,
        "other_guards_hold": program.other_guards_hold,
    }
    positions = range(arity) if arrays is None else arrays
    everything = [f"x{i}" for i in range(arity)]
    xs = [f"x{i}" for i in positions]
    lines = ["def fast_call(args):"]
    if everything:
        lines.append(f"    {', '.join(everything)}, = args")
    cs = []
    for i, (source, value) in enumerate(zip(program.capture_sources, program.graph.captures)):
        c = f"c{i}"
        cs.append(c)
        if isinstance(source, GlobalSource):
            names[f"ns{i}"] = source.namespace
            lines.append(f"    {c} = ns{i}.get({source.name!r})")
        else:
            names[f"read{i}"] = source.read
            lines.append(f"    {c} = read{i}()")
        names[f"S{i}"], names[f"D{i}"] = value.type.shape, value.type.exact_dtype
        lines += [
            f"    if not isinstance({c}, ndarray) or {c}.shape != S{i}"
            f" or ({c}.dtype is not D{i} and {c}.dtype != D{i}):",
            "        return CHANGED",
        ]
    for k, (source, obj) in enumerate(program.global_identity_guards):
        names[f"gns{k}"], names[f"G{k}"] = source.namespace, obj
        lines += [f"    if gns{k}.get({source.name!r}) is not G{k}:", "        return CHANGED"]
    if program.has_other_guards:
        lines += ["    if not other_guards_hold():", "        return CHANGED"]
    if program.writebacks:  # the general path handles read-only and overlapping inputs
        lines += _unshared_input_lines(program, xs, cs, names)
    if usage is not None:
        names["usage"], names["tick"] = usage, next_use
        lines += ["    usage[0] += 1", "    usage[1] = tick()"]
    lines += _call_lines(program, xs + cs, names, executor, finish)
    exec(_fast_call_code("\n".join(lines) + "\n"), names)
    fast_call: Any = names["fast_call"]
    fast_call.__code__ = fast_call.__code__.replace(co_filename=f"<dy2st fast call {program.graph.name}>")
    return cast(Callable[[tuple[Any, ...]], Any], fast_call)


def _unshared_input_lines(program: Program, xs: list[str], cs: list[str], names: dict[str, Any]) -> list[str]:
    """The check that every input the graph updates in place is writable and shares no memory
    with another input. The common call passes distinct arrays that each own their memory: that
    is tested inline (a few attribute reads, a third of ``inputs_overlap``'s call), which is
    asked only otherwise. Example, ``x1`` updated, ``x2`` read::

        fx1 = x1.flags
        fx2 = x2.flags
        if not fx1.writeable:
            return CHANGED
        if not (fx1.owndata and x1.base is None and fx2.owndata and x2.base is None
                and x1 is not x2) and inputs_overlap((x1, x2, )):
            return CHANGED
    """
    names["inputs_overlap"] = program.inputs_overlap
    inputs = xs + cs
    kinds = [_input_kind(value.type) for value in program.graph.inputs] + ["ndarray"] * len(cs)
    arrays = [name for name, kind in zip(inputs, kinds) if kind == "ndarray"]
    # The inputs written back into (``writebacks``) and the ones updated in place: the same set.
    updated = {inputs[update.index] for update in program.in_place_updates}
    written = sorted({inputs[index] for index in program.writebacks.values()} | updated)
    lines = [f"    f{name} = {name}.flags" for name in arrays]
    writable = " or ".join(f"not f{inputs[update.index]}.writeable" for update in program.in_place_updates)
    if writable:
        lines += [f"    if {writable}:", "        return CHANGED"]
    owners = [f"f{name}.owndata and {name}.base is None" for name in arrays]
    pairs = dict.fromkeys(tuple(sorted((w, other))) for w in written for other in arrays if other != w)
    distinct = [f"{a} is not {b}" for a, b in pairs]
    listed = "".join(f"{v}, " for v in inputs)
    lines += [
        f"    if not ({' and '.join(owners + distinct)}) and inputs_overlap(({listed})):",
        "        return CHANGED",
    ]
    return lines


def _call_lines(
    program: Program,
    arguments: list[str],
    names: dict[str, Any],
    executor: Any,
    finish: Callable[[tuple[Any, ...]], Any] | None,
) -> list[str]:
    """The end of a fast call: run the graph on ``arguments`` (``run``, or the ``executor``'s
    function itself), then return ``finish(outputs)`` or the program's results."""
    listed = ", ".join(arguments)
    if executor is not None:
        names["executor"] = executor
        lines = [
            "    try:",
            f"        outputs = executor.function({listed})",
            "    except Exception as error:",
            f"        outputs = executor.recover(error, ({listed}{',' if len(arguments) == 1 else ''}))",
        ]
    else:
        lines = [f"    outputs = run({listed})"]
    if finish is not None:
        names["finish"] = finish
        lines.append("    return finish(outputs)")
    elif program.output_treedef == ANY_LEAF:
        lines.append("    return outputs[0]")
    elif _tuple_of_leaves(program.output_treedef):  # ``return A, B``: the tuple written out
        items = "".join(f"outputs[{k}], " for k in range(len(program.output_treedef.children)))
        lines.append(f"    return ({items})")
    else:
        lines.append(f"    return unflatten(treedef, outputs[:{program.num_results}])")
    return lines


def _tuple_of_leaves(tree: Any) -> bool:
    """Is ``tree`` a tuple of array leaves (``unflatten`` would rebuild it element by element)?"""
    return tree.kind == TUPLE and all(child.kind == LEAF for child in tree.children)


def _input_kind(input_type: Any) -> str:
    """The name, in a fast call's namespace, of the type a graph input's argument has: a Python
    number's (a weak 0-d input, ``staging.trace``'s number inputs) or ndarray."""
    if input_type.weak and not input_type.shape:
        return "float" if input_type.dtype.kind == "f" else "int"
    return "ndarray"


next_use = itertools.count(1).__next__
"""A process-wide clock of graph uses: the least recently used graph has the smallest stamp."""


@functools.lru_cache(maxsize=256)
def _fast_call_code(source: str) -> types.CodeType:
    """The compiled fast-call source. Graphs with the same arity and captures share the text, and
    compiling it again cost 0.15 ms, a twentieth of a warm first call."""
    return compile(source, "<dy2st fast call>", "exec")
