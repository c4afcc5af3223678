#!/bin/sh
# Interrupted work loses nothing (issue 15): a sweep killed by SIGINT, SIGTERM or SIGKILL at
# several points, then resumed with --resume, writes exactly the CSV of an uninterrupted run;
# a calibration killed the same ways resumes from its journal, reusing every complete entry.
# The kill points come from delays, so where each lands varies from run to run; the
# assertions hold wherever it lands (before the first row, mid-way or after the end).
#
# Usage: kill_resume.sh STEPSIM_BIN SCENARIOS_DIR WORK_DIR
set -u
bin=$1
export STEPSIM_SCENARIOS_DIR=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

cat >"$work/sweep.json" <<'JSON'
{"base": {"name": "small",
  "model": {"num_layers": 8, "hidden_size": 1024, "num_attention_heads": 16, "seq_length": 1024,
            "vocab_size": 50257},
  "training": {"world_size": 64, "micro_batch_size": 1, "global_batch_size": 512, "bf16": true},
  "system": "systems/dgx-a100-80gb.json"},
 "search": {"training.tensor_model_parallel_size": "auto",
            "training.pipeline_model_parallel_size": "auto",
            "training.virtual_pipeline_model_parallel_size": "auto",
            "training.micro_batch_size": [1, 2, 4],
            "training.recompute_granularity": "auto"},
 "top": 3}
JSON
"$bin" sweep "$work/sweep.json" --jobs 2 --out "$work/reference.csv" >/dev/null 2>&1 ||
  fail "the uninterrupted sweep failed"
rows=$(wc -l <"$work/reference.csv")
[ "$rows" -gt 20 ] || fail "the reference sweep has only $rows lines"

for sig in INT TERM KILL; do
  for delay in 0.05 0.3 0.8; do
    out="$work/sweep-$sig-$delay.csv"
    "$bin" sweep "$work/sweep.json" --jobs 2 --out "$out" >/dev/null 2>&1 &
    pid=$!
    sleep "$delay"
    kill -s "$sig" "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    "$bin" sweep "$work/sweep.json" --jobs 2 --resume --out "$out" >"$out.log" 2>&1 ||
      fail "resume after SIG$sig at ${delay}s failed: $(cat "$out.log")"
    cmp -s "$out" "$work/reference.csv" ||
      fail "the sweep resumed after SIG$sig at ${delay}s differs from the uninterrupted one"
  done
done
echo "sweep: 9 interrupted runs resumed to the uninterrupted CSV ($rows lines)"

cal="$bin calibrate --backend cpu --quick --repeats 1 --warmup 0"
for sig in INT TERM KILL; do
  for delay in 0.3 1.5; do
    out="$work/profile-$sig-$delay.json"
    $cal --out "$out" >/dev/null 2>&1 &
    pid=$!
    sleep "$delay"
    kill -s "$sig" "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    journaled=0
    if [ -f "$out.journal" ]; then
      # Complete lines after the header; a torn last line is measured again.
      journaled=$(($(wc -l <"$out.journal") - 1))
      [ "$journaled" -ge 0 ] || journaled=0
    fi
    $cal --out "$out" >"$out.log" 2>&1 ||
      fail "calibration resume after SIG$sig at ${delay}s failed: $(cat "$out.log")"
    if [ -f "$out.journal" ]; then fail "the journal must be removed once the profile is written"; fi
    [ -f "$out" ] || fail "no profile after resuming from SIG$sig at ${delay}s"
    if [ "$journaled" -gt 0 ]; then
      grep -q "($journaled more resumed from the journal)" "$out.log" ||
        fail "after SIG$sig at ${delay}s: expected $journaled journaled points resumed: $(cat "$out.log")"
    fi
  done
done
echo "calibrate: 6 interrupted runs resumed from their journals"
