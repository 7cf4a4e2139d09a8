"""Python numbers carried by staged control flow: ``as_python_number``."""

from __future__ import annotations

from typing import Any

import numpy as np

from dy2st.ir.opdefs import OpDef, register
from dy2st.ir.types import TensorType

AS_PYTHON_NUMBER = "as_python_number"


def _as_python_number_rule(types: list[TensorType]) -> TensorType:
    (t,) = types
    if t.shape != ():
        raise ValueError(f"only a 0-d value can become a Python number, got {t}")
    return TensorType((), t.dtype, weak=True)


def _as_python_number(value: Any) -> Any:
    return value.item() if isinstance(value, (np.ndarray, np.generic)) else value


# A loop-carried Python number (``i = 0`` ... ``i += 1``) must stay a Python number from one
# iteration to the next, as in eager code, so it keeps promoting weakly (``x_f32 * i`` is f32).
# NumPy returns np.int64 for ``i + 1``; this op turns it back into an int before the next iteration.
register(
    OpDef(
        AS_PYTHON_NUMBER,
        _as_python_number_rule,
        _as_python_number,
        doc="a 0-d value as a Python number (weakly typed); loop-carried Python numbers",
    )
)
