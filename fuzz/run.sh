#!/bin/sh
# Runs every libFuzzer harness of BUILD_DIR/fuzz for a bounded time each, from seed corpora
# built out of scenarios/, tests/invalid/, tests/fuzz/regressions/, tests/gui/data/ and
# fuzz/seeds/. Prints per format: runs, crashes (any sanitizer report, crash or escaped
# exception), hangs (a run past 10 s) and out-of-memory runs; exits 1 if any format had one,
# leaving the reproducer under WORK_DIR/<format>-crash-*.
#
#   fuzz/run.sh BUILD_DIR SECONDS_PER_FORMAT [WORK_DIR] [-- extra libFuzzer flags]
#
# CI runs 20 s per format (.ci/run); a local campaign, e.g. `fuzz/run.sh build-asan 300`.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=$1
seconds=$2
work=${3:-$(mktemp -d /tmp/stepsim-fuzz.XXXXXX)}
[ $# -ge 3 ] && shift 3 || shift $#
[ "${1:-}" = "--" ] && shift
mkdir -p "$work"

seed() {  # seed FORMAT DIR: copies the seed files of FORMAT into DIR
  case $1 in
    scenario) set -- "$2" "$root"/scenarios/*.json "$root"/scenarios/validation/*.json \
                "$root"/tests/invalid/*.json "$root"/tests/fuzz/regressions/scenario-*.json ;;
    system) set -- "$2" "$root"/scenarios/systems/*.json "$root"/tests/invalid/systems/*.json \
              "$root"/tests/fuzz/regressions/system-*.json ;;
    profile) set -- "$2" "$root"/scenarios/profiles/*.json "$root"/tests/invalid/profiles/*.json \
               "$root"/tests/fuzz/regressions/profile-*.json ;;
    sweep) set -- "$2" "$root"/scenarios/sweeps/*.json "$root"/tests/fuzz/regressions/sweep-*.json ;;
    hf) set -- "$2" "$root"/fuzz/seeds/hf/*.json "$root"/tests/fuzz/regressions/hf-*.json ;;
    megatron) set -- "$2" "$root"/fuzz/seeds/megatron/*.txt ;;
    launch) set -- "$2" "$root"/fuzz/seeds/launch/*.bin ;;
    trace) set -- "$2" "$root"/tests/gui/data/*.json ;;
    csv) set -- "$2" "$root"/tests/gui/data/*.csv ;;
  esac
  dir=$1
  shift
  for f in "$@"; do [ -f "$f" ] && cp "$f" "$dir/"; done
}

status=0
printf '%-9s %9s %8s %6s %5s\n' format runs crashes hangs oom
for format in scenario system profile sweep hf megatron launch trace csv; do
  bin=$build/fuzz/fuzz_$format
  [ -x "$bin" ] || continue
  corpus=$work/$format-corpus
  mkdir -p "$corpus"
  seed "$format" "$corpus"
  log=$work/$format.log
  # -max_len: the large seeds (public profiles, 350 kB) are cut, which keeps runs fast.
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$work/$format-" "$@" "$corpus" >"$log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  crashes=$(ls "$work/$format-crash-"* 2>/dev/null | wc -l)
  hangs=$(ls "$work/$format-timeout-"* 2>/dev/null | wc -l)
  ooms=$(ls "$work/$format-oom-"* 2>/dev/null | wc -l)
  printf '%-9s %9s %8s %6s %5s\n' "$format" "${runs:-?}" "$crashes" "$hangs" "$ooms"
  if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ] || [ "$hangs" -ne 0 ] || [ "$ooms" -ne 0 ]; then
    status=1
    echo "fuzz_$format failed (exit $rc); log $log:" >&2
    grep -v '^#[0-9]' "$log" | tail -40 >&2
  fi
done
echo "fuzz work folder: $work"
exit $status
