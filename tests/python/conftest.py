"""Shared paths for the Python tests: run from ctest (tests/CMakeLists.txt sets
STEPSIM_BIN and PYTHONPATH to the build tree's module)."""

import os
from pathlib import Path

import pytest

SOURCE_DIR = Path(__file__).resolve().parents[2]
SCENARIOS = SOURCE_DIR / "scenarios"


@pytest.fixture(scope="session")
def stepsim_bin() -> str:
    path = os.environ.get("STEPSIM_BIN")
    if not path:
        pytest.fail("STEPSIM_BIN is not set (run the Python tests through ctest)")
    return path
