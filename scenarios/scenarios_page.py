#!/usr/bin/env python3
"""Writes docs/scenarios.md: every shipped scenario with its description and its sources.

    python3 scenarios/scenarios_page.py > docs/scenarios.md
    python3 scenarios/scenarios_page.py --check docs/scenarios.md   # the test docs_scenarios_page

The page is made from the scenario files alone (their `description` and `sources`), so it
never says more than the files do; --check exits 1 when the committed page is stale.
"""

import argparse
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent

# (folder under scenarios/, heading, what its scenarios are for)
FOLDERS = [
    ("", "Shipped scenarios", "`scenarios/`: published training jobs to predict."),
    ("published", "Published runs",
     "`scenarios/published/`: runs with a measured figure, predicted by `stepsim accuracy` "
     "(`runs.json` names each with its figure)."),
    ("validation", "CPU validation",
     "`scenarios/validation/`: tiny jobs `stepsim validate` runs for real on 2 CPU cores."),
    ("validation/gpu", "GPU validation",
     "`scenarios/validation/gpu/`: one-GPU jobs `stepsim validate --backend cuda` runs."),
]

HEADER = """# Scenario provenance

Generated from the shipped scenario files by `scenarios/scenarios_page.py`
(`python3 scenarios/scenarios_page.py > docs/scenarios.md`); the test `docs_scenarios_page`
fails when this file is stale. Do not edit it by hand: edit the scenario's `description` or
`sources`.

Every shipped scenario says in one line what the job is (`description`) and cites where each
setting comes from under `sources`, keyed by the dotted key the citation justifies, as system
files cite their figures ([`scenario.md`](scenario.md#provenance-description-and-sources)).
The loader checks that every cited key is one the file gives. Which key a citation goes under:

- a single setting: its dotted key (`training.tp_comm_overlap_cfg`, `model.vocab_size`);
- several settings of one section from one source (a paper's model table, a recipe's layout):
  the section (`model`, `training`);
- the system file or the cost model chosen: `system`, `cost_model`;
- the job as a whole (the run it reproduces, published figures, what is left out or not
  modelled): `name`.
"""


def cell(text):
    return text.replace("|", "\\|")


def scenarios(folder):
    for path in sorted((HERE / folder).glob("*.json")):
        data = json.loads(path.read_text())
        if "model" in data:  # published/runs.json is not a scenario
            yield path, data


def page():
    out = [HEADER]
    for folder, heading, intro in FOLDERS:
        out.append(f"## {heading}\n\n{intro}\n")
        out.append("| scenario | what the job is |\n|---|---|")
        rows = list(scenarios(folder))
        for path, data in rows:
            rel = path.relative_to(HERE).as_posix()
            out.append(f"| [`{rel}`](../scenarios/{rel}) | {cell(data.get('description', ''))} |")
        out.append("")
        for path, data in rows:
            rel = path.relative_to(HERE).as_posix()
            out.append(f"### `{rel}`\n\n{data.get('description', '')}\n")
            out.append("| key | source |\n|---|---|")
            for key, text in data.get("sources", {}).items():
                out.append(f"| `{key}` | {cell(text)} |")
            out.append("")
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", metavar="PAGE", help="compare with PAGE instead of printing")
    args = parser.parse_args()
    text = page()
    if args.check is None:
        sys.stdout.write(text)
        return 0
    if pathlib.Path(args.check).read_text() != text:
        print(f"{args.check} is stale: run python3 scenarios/scenarios_page.py > docs/scenarios.md",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
