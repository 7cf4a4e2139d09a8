"""The tracer: symbolic ``Tensor``s that record NumPy operations as ops of a graph.

``tensor.py`` (the Tensor proxy and its operators), ``builder.py`` (the graph being built),
``dispatch.py`` (NumPy's ``__array_ufunc__``/``__array_function__`` entry points),
``literal_values.py`` (build-time values of literal-only tensors), ``sequence_operands.py``
(Python operators between a tensor and a list or tuple) and ``handlers.py`` (the tables the op
families in ``dy2st.ops`` register their handlers into). Imports only ``dy2st.ir``.
"""
