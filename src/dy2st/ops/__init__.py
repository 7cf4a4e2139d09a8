"""Every op dy2st stages, one NumPy family per module: importing this package registers them all
into the op definitions (``dy2st.ir.opdefs``) and the tracer's handler tables
(``dy2st.staging.handlers``)."""

from dy2st.ops import (  # noqa: F401  (registration)
    array_api,
    checks,
    complex_parts,
    creation,
    diagonal,
    einsum,
    elementwise,
    elementwise_functions,
    fused,
    generic,
    indexing,
    join,
    linalg,
    python_numbers,
    random,
    rearrange,
    reductions,
    replication,
    scans,
    selection,
    shape,
    sorting,
    structural,
    tape,
)
