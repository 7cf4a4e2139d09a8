"""The truth value of a tensor, as ``bool(array)`` gives it in NumPy: what ``if``, ``while``,
``and``/``or``/``not`` and ``assert`` test."""

from __future__ import annotations

import numpy as np

from dy2st.errors import TensorValueError, build_error, user_location
from dy2st.ops.shape import RESHAPE
from dy2st.staging.tensor import Tensor, apply, apply_ufunc


def truth_value(tensor: Tensor) -> Tensor:
    """The truth value of a one-element tensor as a 0-d bool tensor, as ``bool(array)`` in NumPy.

    Raises:
        TensorValueError: the tensor has more or fewer than one element (NumPy raises too).
    """
    if tensor.size != 1:
        message = (
            f"the truth value of a tensor {tensor.type} with {tensor.size} elements is ambiguous "
            "(NumPy raises here too)"
        )
        note = "reduce it first with np.any(...) or np.all(...)"
        raise build_error(ValueError(message), message, user_location(), note, base=TensorValueError)
    if tensor.shape != ():
        tensor = apply(RESHAPE, tensor, shape=())
    if tensor.dtype.kind != "b":
        tensor = apply_ufunc(np.not_equal, tensor, 0)
    return tensor
