"""dy2st: convert NumPy functions with Python control flow into optimized static graphs.

import dy2st

@dy2st.to_static
def model(x, flag):
    ...
"""

from dy2st import ops as _ops  # noqa: F401  (registers every op)
from dy2st.api import (
    CacheInfo,
    GraphInfo,
    RetracingWarning,
    StaticFunction,
    cond,
    enable_static,
    export_onnx,
    save,
    to_static,
    while_loop,
)
from dy2st.deploy.graph_format import SavedGraphError
from dy2st.deploy.onnx_export import OnnxExportError
from dy2st.deploy.saving import LoadedFunction, SignatureMismatchError, load
from dy2st.errors import (
    ConversionError,
    DifferentiationError,
    Dy2stError,
    Dy2stRuntimeError,
    GraphAssertionError,
    GraphBuildError,
    SourceLocation,
    TensorValueError,
    UnsupportedOpError,
    UnsupportedSyntaxError,
)
from dy2st.gradients import grad, value_and_grad, vjp
from dy2st.tracing import TracedFunction, TracerWarning, trace

__version__ = "0.1.0"

__all__ = [
    "CacheInfo",
    "GraphInfo",
    "RetracingWarning",
    "enable_static",
    "ConversionError",
    "DifferentiationError",
    "Dy2stError",
    "Dy2stRuntimeError",
    "GraphAssertionError",
    "GraphBuildError",
    "LoadedFunction",
    "OnnxExportError",
    "SavedGraphError",
    "SignatureMismatchError",
    "SourceLocation",
    "StaticFunction",
    "TracedFunction",
    "TracerWarning",
    "TensorValueError",
    "UnsupportedOpError",
    "UnsupportedSyntaxError",
    "cond",
    "export_onnx",
    "grad",
    "load",
    "save",
    "to_static",
    "trace",
    "value_and_grad",
    "vjp",
    "while_loop",
]
