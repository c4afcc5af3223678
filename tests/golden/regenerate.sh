#!/usr/bin/env bash
# Regenerates the golden files of tests/golden/schedule_cases.txt from a built `stepsim`.
# Usage: tests/golden/regenerate.sh [path/to/stepsim]   (default: build/bin/stepsim)
# Review the diff before committing: a change here is a change of behaviour.
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
