#!/usr/bin/env bash
# Fault handling of `stepsim validate` under mpirun -np 2 (ctest label `mpi`): world rank 1 is
# told to hang in the first measured step; rank 0's watchdog must stop the job with a message
# naming rank 1 and the task it waited in, and keep what was measured (partial report).
# Then rank 1 is told to exit: the job must stop with a failure status.
#
# Usage: fault_test.sh STEPSIM_BIN SCENARIOS_DIR WORK_DIR MPIRUN [MPIRUN FLAGS...]
set -uo pipefail

bin=$1
scenarios=$2
work=$3
shift 3
mpirun=("$@")
scenario="$scenarios/validation/pp2-1f1b.json"
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

# validate CASE SCENARIO TASK [OPTIONS...]: world rank 1 hangs at its task TASK; the job must
# fail, the watchdog name the hung rank 1 and rank 0 write a partial report
# ($work/partial-CASE.json, complete=false). Output in $work/CASE.out and $work/CASE.err.
hang() {
  local name=$1 file=$2 task=$3
  shift 3
  "${mpirun[@]}" -np 2 "$bin" validate "$file" --backend cpu --warmup 1 --steps 3 \
    --timeout 3 --fail-rank 1 --fail-at-task "$task" --out "$work/partial-$name.json" "$@" \
    > "$work/$name.out" 2> "$work/$name.err"
  local status=$?
  cat "$work/$name.err"
  [ "$status" -ne 0 ] || fail "a hung rank must make validate fail ($name, status $status)"
  grep -q "waiting for rank(s) 1" "$work/$name.err" || fail "the message must name the hung rank 1 ($name)"
  [ -s "$work/partial-$name.json" ] || fail "rank 0 must write the partial report ($name)"
  grep -q '"complete": false' "$work/partial-$name.json" ||
    fail "the partial report must say complete=false ($name)"
}

# Each step of this scenario has a few hundred tasks per rank: task 800 is in a measured step
# (warm-up 1, then 3 measured), after at least one complete measured step.
hang hang "$scenario" 800
grep -q "rank 0 (pipeline stage 0" "$work/hang.err" || fail "the message must name the rank that stopped"
grep -q "in step [0-9]*, task [0-9]* '" "$work/hang.err" || fail "the message must name the task"
grep -q "nominal figures of system 'cpu-localhost'" "$work/partial-hang.json" ||
  fail "a report whose prediction is not calibrated on this machine must say so"
grep -q '"measured_step_time_s": 0\.[0-9]*[1-9]' "$work/partial-hang.json" ||
  grep -q '"measured_step_time_s": [1-9]' "$work/partial-hang.json" ||
  fail "the partial report must keep the measured step(s)"

"${mpirun[@]}" -np 2 "$bin" validate "$scenario" --backend cpu --warmup 1 --steps 3 \
  --timeout 3 --fail-rank 1 --fail-at-task 10 --fail-mode exit \
  > "$work/exit.out" 2> "$work/exit.err"
status=$?
[ "$status" -ne 0 ] || fail "a rank that exits must make the job fail (status $status)"
# Interleaved calibration (--calibrate: 3 rounds of calibration, each followed by 1 warm-up
# and 1 measured step): rank 1 (stage 1, ~330 tasks a step) hangs at its task 900, in the
# second round's steps (tasks 660-1320). The partial report keeps the first round's step.
hang rounds "$scenario" 900 --calibrate "$work/profile.json"
grep -q '"measured_step_times_s": \[$' "$work/partial-rounds.json" &&
  grep -A1 '"measured_step_times_s": \[$' "$work/partial-rounds.json" | grep -q '[0-9]' ||
  fail "the partial report must keep the first round's measured step"
# Megatron's non-blocking P2P calls (pp2-interleaved, overlap_p2p_comm) run beside the compute
# on the CPU backend's progress thread: rank 0 then blocks waiting for a transfer that rank 1,
# hung, never posts; the watchdog names that call and rank 1 all the same.
hang async "$scenarios/validation/pp2-interleaved.json" 800
grep -q '"async_p2p": true' "$work/partial-async.json" ||
  fail "the partial report must say the P2P calls ran beside the compute"
echo "fault handling ok"
