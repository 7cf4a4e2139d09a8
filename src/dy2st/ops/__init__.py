"""The op registry and every op dy2st stages: importing this package registers them all."""

from dy2st.ops import registry
from dy2st.ops import structural, elementwise, reductions, shape, linalg, indexing, fused  # noqa: F401  (registration)
from dy2st.ops import creation, join, elementwise_functions, einsum, scans  # noqa: F401  (registration)
from dy2st.ops import sorting, replication, diagonal  # noqa: F401  (registration)

__all__ = ["registry"]
