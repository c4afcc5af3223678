#!/usr/bin/env bash
# Regenerates the golden files of tests/golden/ from a built `stepsim`:
#  - schedule_*: the cases of schedule_cases.txt (`stepsim schedule ARGS`, output and status);
#  - scenarios/published/accuracy-by-profile.json: `stepsim accuracy --by-profile`;
#  - predict_*.json: `stepsim predict S --format json` of every shipped scenario S
#    (scenarios/*.json and scenarios/validation/*.json; predict_validation_dp2.json is
#    scenarios/validation/dp2.json).
# Usage: tests/golden/regenerate.sh [path/to/stepsim]   (default: build/bin/stepsim)
# Review the diff before committing: a change here is a change of behaviour, and a changed
# prediction must be explained in the commit message.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${1:-$here/../../build/bin/stepsim}"
[[ -x "$bin" ]] || { echo "regenerate.sh: no executable stepsim at $bin" >&2; exit 1; }
while read -r file args; do
  [[ -z "$file" || "$file" == \#* ]] && continue
  # shellcheck disable=SC2086  # the arguments are split on purpose
  { status=0; "$bin" schedule $args 2>&1 || status=$?; echo "exit $status"; } > "$here/$file"
  echo "wrote $file"
done < "$here/schedule_cases.txt"

scenarios="$(cd "$here/../../scenarios" && pwd)"
export STEPSIM_SCENARIOS_DIR="$scenarios"
# The open accuracy table first: predict's provenance line quotes it.
"$bin" accuracy --by-profile "$scenarios/published/accuracy-by-profile.json" > /dev/null
echo "wrote scenarios/published/accuracy-by-profile.json"
rm -f "$here"/predict_*.json
for path in "$scenarios"/*.json "$scenarios"/validation/*.json; do
  rel="${path#"$scenarios"/}"
  name="predict_${rel//\//_}"
  "$bin" predict "$path" --format json > "$here/$name"
  echo "wrote $name"
done
