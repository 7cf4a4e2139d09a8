"""Every op dy2st stages, one NumPy family per module: importing this package registers them all
into the op definitions (``dy2st.ir.opdefs``) and the tracer's handler tables
(``dy2st.staging.handlers``)."""

from dy2st.ops import structural, elementwise, reductions, shape, linalg, indexing, fused  # noqa: F401  (registration)
from dy2st.ops import creation, join, elementwise_functions, einsum, scans  # noqa: F401  (registration)
from dy2st.ops import sorting, replication, diagonal  # noqa: F401  (registration)
from dy2st.ops import checks, python_numbers  # noqa: F401  (registration)
