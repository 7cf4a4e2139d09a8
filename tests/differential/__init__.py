"""The differential program generator: random programs in pattern families, run eagerly and
converted, compared exactly, and reduced to small reproducers when they differ.

- ``families/``: what each family generates (statements, idioms, inputs); ``FAMILIES`` by name.
- ``skeleton.py``: the control-flow skeleton the families fill, and the generator's ``Knobs``.
- ``running.py``: running both sides from the same state and classifying the outcome.
- ``compare.py``: what differs between two values, as data.
- ``reduce.py``: shrinking a failing program; ``script.py``: script mode and its report.
"""
