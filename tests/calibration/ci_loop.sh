#!/usr/bin/env bash
# The validation CI loop, for real on this machine's CPU (ctest label `mpi`):
#   for each scenario of scenarios/validation/:
#     mpirun -np 2 stepsim validate S --backend cpu --calibrate PROFILE --record RECORDS
#       (a quick calibration of S's own op shapes in the same process, right before the
#        measured steps: on a shared 2-core machine the CPU's speed drifts by 20-40% over
#        seconds, so a profile taken by a separate earlier run would describe another machine)
#   stepsim regress RECORDS --tolerance T
# and prints every figure and the median error. Fails when a command fails or when regress
# finds a relative error above T (STEPSIM_CI_TOLERANCE, default 0.50: see
# scenarios/validation/README.md for the accuracy reached and what limits it).
#
# Usage: ci_loop.sh STEPSIM_BIN SCENARIOS_DIR WORK_DIR MPIRUN [MPIRUN FLAGS...]
set -euo pipefail

bin=$1
scenarios=$2
work=$3
shift 3
mpirun=("$@")
tolerance=${STEPSIM_CI_TOLERANCE:-0.50}

rm -rf "$work"
mkdir -p "$work/records"

for scenario in pp2-1f1b pp2-interleaved tp2-sp dp2; do
  file="$scenarios/validation/$scenario.json"
  echo "=== $scenario: calibrate in-process, then validate"
  "${mpirun[@]}" -np 2 "$bin" validate "$file" --backend cpu \
    --calibrate "$work/profile-$scenario.json" \
    --warmup 2 --steps 7 --timeout 120 --record "$work/records" \
    --out "$work/$scenario.report.json" --trace "$work/$scenario.trace.json"
done

echo "=== regress (tolerance $tolerance)"
"$bin" regress "$work/records" --tolerance "$tolerance"
