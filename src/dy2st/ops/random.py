"""Random draws that happen when the graph runs, not when it is built.

A ``Generator`` or ``RandomState`` method (``rng.normal(size=n)``, and the legacy ``np.random.*``
functions, which are methods of NumPy's global ``RandomState``) becomes a ``random_draw`` op. Its
first operand is the generator itself, held in a 0-d object array (a constant for a generator that
exists when the graph is built, the result of a ``random_generator`` op for one the function creates
with ``np.random.default_rng``); its kernel calls the same method on it at every run, so the
generator advances exactly as in eager code: the same seed gives the same numbers, call after call.

Both ops have side effects (the generator's state), so passes never remove, merge, hoist or fold
them, and they keep their order in the block.

The result's type comes from calling the method once on a throwaway generator of the same kind
with stand-in values for the tensor arguments: shapes and dtypes do not depend on the state. A
Python number result (``rng.normal()`` is a ``float``, ``np.random.randint(5)`` an ``int``) is
weakly typed, a NumPy scalar result (``rng.integers(5)``) strong, as in eager code.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dy2st.errors import UnsupportedOpError, user_location
from dy2st.ir.core import CONST
from dy2st.ir.opdefs import OpDef, register
from dy2st.ir.types import TensorType, type_of_array
from dy2st.ops.structural import Literal
from dy2st.staging.builder import current_builder
from dy2st.staging.tensor import Tensor, apply

RANDOM_DRAW = "random_draw"
RANDOM_GENERATOR = "random_generator"
GENERATOR_TYPE = TensorType((), np.dtype(object))

# Methods that change an array in place or return something that is not an array: refused, with
# the rewrite that works.
_REFUSED_METHODS = {
    "shuffle": "use x = rng.permutation(x) (or np.random.permutation) instead",
    "bytes": "draw integers instead (rng.integers(0, 256, size=n, dtype=np.uint8))",
    "get_state": "read the state outside the converted function",
    "set_state": "set the state outside the converted function",
    "spawn": "spawn generators outside the converted function and pass them in",
    "jumped": "create the jumped generator outside the converted function and pass it in",
}


def generator_handle(generator: Any) -> np.ndarray:
    """``generator`` in a 0-d object array: how the graph holds a generator."""
    handle = np.empty((), dtype=object)
    handle[()] = generator
    return handle


def _generator_of(handle: Any) -> Any:
    return handle[()] if isinstance(handle, np.ndarray) else handle


def _call(generator: Any, method: str, template: tuple, keywords: tuple, params: Any) -> Any:
    params = iter(params)
    args = [next(params) if slot is None else slot.value for slot in template]
    kwargs = {name: next(params) if slot is None else slot.value for name, slot in keywords}
    return getattr(generator, method)(*args, **kwargs)


def _draw_kernel(handle, *params, method, kind, template, keywords):
    result = _call(_generator_of(handle), method, template, keywords, params)
    return () if result is None else result


def _throwaway_generator(kind: str) -> Any:
    return np.random.default_rng(0) if kind == "Generator" else np.random.RandomState(0)


# Stand-in values for tensor arguments when working out a draw's type: the k-th tensor argument
# holds k + 1 first (so `integers(low, high)` has low < high), then 1 everywhere, then 0.5 (a
# probability).
_STAND_INS = (lambda k: k + 1, lambda k: 1, lambda k: 0.5)


def _draw_type(types, *, method, kind, template, keywords):
    error: Exception | None = None
    for stand_in in _STAND_INS:
        examples = [np.full(t.shape, stand_in(k)).astype(t.dtype) for k, t in enumerate(types[1:])]
        try:
            result = _call(_throwaway_generator(kind), method, template, keywords, examples)
        except (ValueError, TypeError) as e:
            error = error or e
            continue
        return _result_type(result, method)
    assert error is not None
    raise error


def _result_type(result: Any, method: str) -> list[TensorType]:
    if result is None:
        return []
    if isinstance(result, (bool, int, float, complex)) and not isinstance(result, np.generic):
        return [TensorType((), np.asarray(result).dtype, weak=True)]
    if isinstance(result, (np.ndarray, np.generic)):
        return [type_of_array(result)]
    raise TypeError(f"{method} returns a {type(result).__name__}, not an array")


def _generator_type(types, **attrs):
    return GENERATOR_TYPE


def _new_generator(*seed):
    return generator_handle(np.random.default_rng(*(_seed_value(s) for s in seed)))


def _seed_value(seed: Any) -> Any:
    return seed.item() if isinstance(seed, np.ndarray) and seed.ndim == 0 else seed


register(
    OpDef(
        RANDOM_DRAW,
        _draw_type,
        _draw_kernel,
        side_effect=True,
        num_results=-1,
        doc="a Generator/RandomState method called at run time on operand 0; attributes method, template, keywords",
    )
)
register(
    OpDef(
        RANDOM_GENERATOR,
        _generator_type,
        _new_generator,
        side_effect=True,
        doc="np.random.default_rng(seed) at run time: a new generator in a 0-d object array",
    )
)


def draw(handle: Tensor, kind: str, method: str, args: tuple, kwargs: dict) -> Any:
    """Stage ``generator.method(*args, **kwargs)`` on the generator ``handle`` holds.

    Tensor arguments become operands; every other argument is kept as a literal. Returns the
    result tensor, or None for a method without a result (``seed``).
    """
    if method in _REFUSED_METHODS:
        raise UnsupportedOpError(
            f"{method}() of a random generator is not supported in a converted function",
            user_location(),
            _REFUSED_METHODS[method],
        )
    if "out" in kwargs:
        raise UnsupportedOpError(
            f"{method}(out=...) of a random generator is not supported in a converted function",
            user_location(),
            "use the returned array",
        )
    tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
    template = tuple(None if isinstance(a, Tensor) else Literal(a) for a in args)
    keywords = tuple((name, None if isinstance(a, Tensor) else Literal(a)) for name, a in kwargs.items())
    result = apply(RANDOM_DRAW, handle, *tensors, method=method, kind=kind, template=template, keywords=keywords)
    return None if isinstance(result, tuple) else result


def constant_handle(generator: Any) -> Tensor:
    """The graph's handle on a generator that exists while the graph is built."""
    builder = current_builder()
    assert builder is not None, "random draws are staged while a graph is built"
    op = builder.emit(CONST, [], {"value": generator_handle(generator)}, result_types=[GENERATOR_TYPE])
    return Tensor(op.result, builder)


def new_generator(seed: tuple) -> Tensor:
    """Stage ``np.random.default_rng(*seed)``: a fresh generator at every run, as in eager code."""
    return apply(RANDOM_GENERATOR, *seed)
