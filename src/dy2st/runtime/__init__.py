"""The runtime: helpers that converted code calls (through the ``_dy2st`` alias).

Each helper dispatches on its operands: Python values keep Python semantics (the helper just runs
the code), symbolic tensors are staged into graph ops.
"""

from dy2st.runtime import control_flow
from dy2st.runtime.asserts import convert_assert
from dy2st.runtime.calls import convert_call, convert_print
from dy2st.runtime.control_flow import *  # noqa: F403  (its __all__: the if/while/for helpers)
from dy2st.runtime.control_flow.logical import (
    convert_compare_chain,
    convert_logical_and,
    convert_logical_not,
    convert_logical_or,
)

__all__ = [
    *control_flow.__all__,
    "convert_assert",
    "convert_call",
    "convert_compare_chain",
    "convert_logical_and",
    "convert_logical_not",
    "convert_logical_or",
    "convert_print",
]
