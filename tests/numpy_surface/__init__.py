"""The NumPy surface under test: every public callable of ``numpy``, ``numpy.linalg``,
``numpy.fft`` and every public ``numpy.ndarray`` method, each with sample calls written the way
programs call it (``calls.py``) over a fixed set of array arguments (``arguments.py``), and the
machinery that runs a sample converted and eagerly and compares the two (``running.py``).

``tools/numpy_coverage.py`` turns it into docs/numpy-coverage.md; tests/test_numpy_surface.py
checks converted == eager over argument variants, with the cases that fail today listed in
``known_failures.txt`` (written by ``tools/numpy_coverage.py --known-failures``).
"""
