"""The NumPy backend: generated executors for graphs."""

from dy2st.backend.numpy.executor import Executor

__all__ = ["Executor"]
