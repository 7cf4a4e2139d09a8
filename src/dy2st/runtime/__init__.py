"""The runtime: helpers that converted code calls (through the ``_dy2st`` alias).

Each helper dispatches on its operands: Python values keep Python semantics (the helper just runs
the code), symbolic tensors are staged into graph ops.
"""

from dy2st.runtime.calls import convert_call, convert_print
from dy2st.runtime.logical import (
    convert_compare_chain,
    convert_ifexp,
    convert_logical_and,
    convert_logical_not,
    convert_logical_or,
    iterate_until,
)
from dy2st.runtime.asserts import convert_assert
from dy2st.runtime.control_flow import (
    Undefined,
    cond,
    convert_for,
    convert_ifelse,
    convert_while_loop,
    for_enumerate,
    for_range,
    for_zip,
    python_bool,
    python_iterable,
    while_loop,
)

__all__ = [
    "Undefined",
    "cond",
    "convert_for",
    "convert_ifelse",
    "convert_while_loop",
    "for_enumerate",
    "for_range",
    "for_zip",
    "python_bool",
    "python_iterable",
    "while_loop",
    "convert_assert",
    "convert_call",
    "convert_compare_chain",
    "convert_ifexp",
    "convert_logical_and",
    "convert_logical_not",
    "convert_logical_or",
    "convert_print",
    "iterate_until",
]
