"""Entry points from NumPy's protocols into the op registry."""

from __future__ import annotations

from dy2st.errors import UnsupportedOpError, user_location
from dy2st.ops import registry

# ufunc.reduce spellings that have a reduction op of their own.
_REDUCE_AS = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
              "logical_and": "all", "logical_or": "any"}  # names of NumPy functions


def call_ufunc(ufunc, method: str, inputs, kwargs):
    """``__array_ufunc__``: stage ``ufunc`` (plain call or ``reduce``) on symbolic inputs."""
    from dy2st.ir.tensor import apply

    if kwargs.get("out") is not None:
        raise UnsupportedOpError(
            f"np.{ufunc.__name__}(..., out=...) writes into an existing array, which a converted "
            "function does not do", user_location(), "assign the result instead: y = np.f(x)",
        )
    if method == "__call__":
        opname = registry.UFUNC_OPS.get(ufunc)
        if ufunc.__name__ == "matmul":
            opname = "matmul"
        if opname is None:
            raise UnsupportedOpError(f"the ufunc np.{ufunc.__name__} is not supported", user_location())
        unsupported = sorted(k for k in kwargs if k != "out")
        if unsupported:
            raise UnsupportedOpError(
                f"np.{ufunc.__name__}: keyword arguments {unsupported} are not supported", user_location()
            )
        return apply(opname, *inputs)
    if method == "reduce" and ufunc.__name__ in _REDUCE_AS:
        import numpy as np

        handler = registry.FUNCTION_HANDLERS[getattr(np, _REDUCE_AS[ufunc.__name__])]
        kwargs.setdefault("axis", 0)
        kwargs.pop("out", None)
        return handler(*inputs, **kwargs)
    raise UnsupportedOpError(f"np.{ufunc.__name__}.{method} is not supported", user_location())


def call_function(func, args, kwargs):
    """``__array_function__``: stage a NumPy function on symbolic arguments."""
    handler = registry.FUNCTION_HANDLERS.get(func)
    if handler is None:
        name = getattr(func, "__name__", repr(func))
        module = getattr(func, "__module__", "numpy") or "numpy"
        prefix = "np." if module.startswith("numpy") else f"{module}."
        raise UnsupportedOpError(
            f"the NumPy function {prefix}{name} is not supported on symbolic tensors",
            user_location(),
            "see docs/numpy-support.md for the supported surface",
        )
    return handler(*args, **kwargs)
