"""Shared test setup: the IR verifier runs after every pass of every graph the tests build."""

import os

os.environ.setdefault("DY2ST_VERIFY", "1")


def pytest_addoption(parser):
    parser.addoption(
        "--update-goldens",
        action="store_true",
        default=False,
        help="rewrite golden expected files from the current output instead of comparing",
    )
