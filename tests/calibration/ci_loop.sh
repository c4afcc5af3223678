#!/usr/bin/env bash
# The validation CI loop, for real on this machine's CPU (ctest label `mpi`):
#   for each scenario of scenarios/validation/:
#     mpirun -np 2 stepsim calibrate --backend cpu --quick --scenario S --out PROFILE
#     mpirun -np 2 stepsim validate S --backend cpu --profile PROFILE --record RECORDS
#   stepsim regress RECORDS --tolerance T
# and prints every figure and the median error. Fails when a command fails or when regress
# finds a relative error above T (STEPSIM_CI_TOLERANCE, default 0.15).
#
# Usage: ci_loop.sh STEPSIM_BIN SCENARIOS_DIR WORK_DIR MPIRUN [MPIRUN FLAGS...]
set -euo pipefail

bin=$1
scenarios=$2
work=$3
shift 3
mpirun=("$@")
tolerance=${STEPSIM_CI_TOLERANCE:-0.15}

rm -rf "$work"
mkdir -p "$work/records"

for scenario in pp2-1f1b pp2-interleaved tp2-sp dp2; do
  file="$scenarios/validation/$scenario.json"
  profile="$work/profile-$scenario.json"
  echo "=== $scenario: calibrate"
  "${mpirun[@]}" -np 2 "$bin" calibrate --backend cpu --quick --repeats "${STEPSIM_CI_REPEATS:-5}" \
    --scenario "$file" \
    --out "$profile" > "$work/calibrate-$scenario.log" 2>&1 ||
    { cat "$work/calibrate-$scenario.log"; exit 1; }
  tail -n 1 "$work/calibrate-$scenario.log"
  echo "=== $scenario: validate"
  "${mpirun[@]}" -np 2 "$bin" validate "$file" --backend cpu --profile "$profile" \
    --warmup 1 --steps 5 --timeout 120 --record "$work/records" \
    --out "$work/$scenario.report.json" --trace "$work/$scenario.trace.json"
done

echo "=== regress (tolerance $tolerance)"
"$bin" regress "$work/records" --tolerance "$tolerance"
