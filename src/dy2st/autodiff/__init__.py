"""Reverse-mode differentiation on the IR (docs/autodiff.md): ``differentiate`` appends the
backward code of a staged graph to it; ``dy2st.gradients`` builds the user API on it."""

from dy2st.autodiff.reverse import differentiate

__all__ = ["differentiate"]
