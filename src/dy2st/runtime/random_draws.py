"""Calls on random generators inside converted code: staged as draws that run with the graph.

``convert_call`` asks ``staged_random_call`` about every call while a graph is built:

* a method of a ``Generator`` or ``RandomState`` that exists now (a module global, an argument,
  ``self.rng``, or NumPy's global ``RandomState`` behind ``np.random.normal`` and the other legacy
  functions) is staged on a constant handle to that very object; the graph is guarded or keyed by
  the object's identity, so a rebound global or another generator argument builds another graph;
* ``np.random.default_rng(seed)`` is staged as a new generator at every run (``StagedGenerator``),
  as eager code creates one at every call; ``np.random.seed(s)`` reseeds at every run;
* constructing a generator any other way (``np.random.Generator(np.random.PCG64(0))``,
  ``RandomState(0)``, a bit generator, a ``SeedSequence``) is refused: it would be built once and
  shared by every call.

See ``ops/random.py`` for the ops.
"""

from __future__ import annotations

import sys
from typing import Any

from dy2st.errors import UnsupportedOpError, user_location
from dy2st.ops.random import constant_handle, draw, new_generator
from dy2st.runtime.control_flow.values import wrap_result
from dy2st.staging.tensor import Tensor


def _random_module() -> Any:
    """``numpy.random`` if the user imported it (dy2st does not: it costs 8 ms at import)."""
    return sys.modules.get("numpy.random")


def _generator_kind(obj: Any) -> str | None:
    random = _random_module()
    if random is None:
        return None
    if isinstance(obj, random.Generator):
        return "Generator"
    if isinstance(obj, random.RandomState):
        return "RandomState"
    return None


def _wrapped(result: Any) -> Any:
    """A draw's result as user code sees it: a Python number stays a Python number."""
    if isinstance(result, Tensor):
        return wrap_result(result._builder, result._value)
    return result


class StagedGenerator:
    """What ``np.random.default_rng(...)`` gives inside converted code: its methods stage draws on
    the generator the graph creates at every run."""

    __slots__ = ("_handle",)

    def __init__(self, handle: Tensor):
        self._handle = handle

    def __getattr__(self, method: str) -> Any:
        if method.startswith("_") or method in ("bit_generator",):
            raise UnsupportedOpError(
                f"'{method}' of a generator created inside a converted function is not supported",
                user_location(),
                "create the generator outside the function and pass it in",
            )

        def staged_method(*args: Any, **kwargs: Any) -> Any:
            return _wrapped(draw(self._handle, "Generator", method, args, kwargs))

        return staged_method


def _staged_default_rng(*seed: Any) -> StagedGenerator:
    return StagedGenerator(new_generator(seed))


def _refuse_construction(name: str):
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise UnsupportedOpError(
            f"np.random.{name}(...) inside a converted function would be created once, when the graph "
            "is built, and shared by every call (eager code creates a new one at every call)",
            user_location(),
            "use np.random.default_rng(seed) inside the function, or create the generator outside and pass it in",
        )

    return refuse


_CONSTRUCTORS = ("Generator", "RandomState", "SeedSequence", "PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")


def staged_random_call(f: Any) -> Any:
    """The staged form of ``f`` if it is a random generator's method or constructor, else None."""
    random = _random_module()
    if random is None:
        return None
    owner = getattr(f, "__self__", None)
    kind = _generator_kind(owner)
    if kind is not None:
        method = f.__name__

        def staged_method(*args: Any, **kwargs: Any) -> Any:
            return _wrapped(draw(constant_handle(owner), kind, method, args, kwargs))

        return staged_method
    if f is random.default_rng:
        return _staged_default_rng
    if f is random.seed:
        return lambda *args, **kwargs: draw(constant_handle(random.mtrand._rand), "RandomState", "seed", args, kwargs)
    for name in _CONSTRUCTORS:
        if f is getattr(random, name, None):
            return _refuse_construction(name)
    return None
