"""A suite of NumPy benchmark kernels of the kind PolyBench and npbench collect, written with
Python loops, slices and in-place updates as NumPy users write them. ``KERNELS`` lists every
kernel with its family and argument maker (``kernel.make("test")``, ``kernel.make("small")``);
``benchmarks/kernel_suite.py`` times them and ``tests/test_kernel_suite.py`` checks them."""

from __future__ import annotations

from . import data_analysis, dynamic_programming, element_loops, linear_algebra, misc, simulations, solvers, stencils
from .kernel import MEDIUM, PRESETS, RESIZED, Kernel, copy_arguments, difference, tolerance

KERNELS: list[Kernel] = [
    *linear_algebra.KERNELS,
    *solvers.KERNELS,
    *stencils.KERNELS,
    *dynamic_programming.KERNELS,
    *data_analysis.KERNELS,
    *simulations.KERNELS,
    *misc.KERNELS,
    *element_loops.KERNELS,
]

BY_NAME: dict[str, Kernel] = {kernel.name: kernel for kernel in KERNELS}

__all__ = ["BY_NAME", "KERNELS", "MEDIUM", "PRESETS", "RESIZED", "Kernel", "copy_arguments", "difference", "tolerance"]
