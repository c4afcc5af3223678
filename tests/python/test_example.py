"""docs/examples/plan_llama.py runs as a user would run it and draws its plot."""

import os
import subprocess
import sys

from pathlib import Path

import stepsim
from conftest import SOURCE_DIR


def test_plan_llama(tmp_path):
    out = tmp_path / "plan.png"
    result = subprocess.run([sys.executable, str(SOURCE_DIR / "docs/examples/plan_llama.py"),
                             str(out)], capture_output=True, text=True, cwd=tmp_path,
                            env=dict(os.environ, MPLBACKEND="Agg",
                                     PYTHONPATH=str(Path(stepsim.__file__).parents[1])))
    assert result.returncode == 0, result.stderr
    assert "feasible" in result.stdout and "plot written" in result.stdout
    data = out.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 10_000
