"""The CLI and the module give the same JSON documents: predict and memory for every
shipped scenario, schedule for each schedule kind, and the summary and rows of every
shipped sweep."""

import csv
import io
import json
import subprocess

import pytest

import stepsim
from conftest import SCENARIOS

SHIPPED = sorted(str(p.relative_to(SCENARIOS))
                 for p in [*SCENARIOS.glob("*.json"), *SCENARIOS.glob("validation/*.json")])
SWEEPS = sorted(p.name for p in (SCENARIOS / "sweeps").glob("*.json"))
# How a run went, not what it found.
RUN_KEYS = {"wall_s", "configurations_per_s", "jobs"}


def cli(stepsim_bin, *args):
    out = subprocess.run([stepsim_bin, *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_every_shipped_scenario_is_covered():
    assert "gpt3-175b-a100-64.json" in SHIPPED and len(SHIPPED) >= 12


@pytest.mark.parametrize("name", SHIPPED)
def test_predict_and_memory(stepsim_bin, name):
    path = str(SCENARIOS / name)
    assert json.loads(cli(stepsim_bin, "predict", path, "--format", "json")) == \
        stepsim.predict(path)
    assert json.loads(cli(stepsim_bin, "memory", path, "--format", "json")) == \
        stepsim.memory(path)


@pytest.mark.parametrize("args", [dict(pp=4, microbatches=8),
                                  dict(pp=4, microbatches=8, vpp=2, overlap_p2p=True),
                                  dict(pp=3, microbatches=8, vpp=2, group_size=4),
                                  dict(pp=2, microbatches=4, gpipe=True)])
def test_schedule(stepsim_bin, args):
    flags = ["--pp", str(args["pp"]), "--microbatches", str(args["microbatches"]),
             "--vpp", str(args.get("vpp", 1))]
    if "group_size" in args:
        flags += ["--group-size", str(args["group_size"])]
    if args.get("overlap_p2p"):
        flags.append("--overlap-p2p")
    if args.get("gpipe"):
        flags.append("--gpipe")
    assert json.loads(cli(stepsim_bin, "schedule", *flags, "--format", "json")) == \
        stepsim.schedule(**args)


def typed(cell: str):
    """A CSV cell as the module types it: empty is None, then bool, int, float, text."""
    if cell == "":
        return None
    if cell in ("true", "false"):
        return cell == "true"
    for kind in (int, float):
        try:
            return kind(cell)
        except ValueError:
            pass
    return cell


@pytest.mark.parametrize("name", SWEEPS)
def test_sweep(stepsim_bin, tmp_path, name):
    path = str(SCENARIOS / "sweeps" / name)
    plan = tmp_path / "plan.csv"
    summary = json.loads(cli(stepsim_bin, "sweep", path, "--jobs", "2", "--format", "json",
                             "--out", str(plan)))
    rows = stepsim.sweep(path, jobs=2)
    strip = lambda d: {k: v for k, v in d.items() if k not in RUN_KEYS}  # noqa: E731
    assert strip(summary) == strip(rows.summary)
    with open(plan, newline="", encoding="utf-8") as f:
        cli_rows = [{k: typed(v) for k, v in r.items()} for r in csv.DictReader(f)]
    assert len(cli_rows) == len(rows) == summary["evaluated"]
    for a, b in zip(cli_rows, rows):
        assert a == b
