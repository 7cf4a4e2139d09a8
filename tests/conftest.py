"""Shared test setup: the IR verifier runs after every pass of every graph the tests build."""

import os

os.environ.setdefault("DY2ST_VERIFY", "1")
