"""Graph-to-graph optimizing passes and the pipeline that runs them."""

from dy2st.passes.pipeline import optimize

__all__ = ["optimize"]
