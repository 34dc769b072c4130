#!/usr/bin/env bash
# A long local fuzzing campaign for one target, and the minimised corpus it leaves behind.
# Seeds like the test command (tests/fuzz/run_fuzz.sh), runs TARGET for SECONDS on JOBS
# workers, prints libFuzzer's final stats (executions, coverage, peak memory), then replaces
# tests/fuzz/corpus/TARGET with the smallest set of inputs (libFuzzer -merge=1) that keeps
# the coverage of the old committed corpus and of everything the campaign found: commit it.
# Usage: tests/fuzz/campaign.sh FUZZ_BUILD_DIR TARGET SECONDS [JOBS]   (JOBS: 2)
set -euo pipefail
build=$(realpath "$1")
target=$2
secs=$3
jobs=${4:-2}
src=$(realpath "$(dirname "$0")/../..")
bin=$build/tests/fuzz/$target
[[ -x $bin ]] || { echo "no $bin: configure with -DAMBER_FUZZ=ON and build it" >&2; exit 2; }
bash "$src/tests/fuzz/run_fuzz.sh" "$build" "$src" 1 > /dev/null  # the seed corpora
camp=$build/fuzz-campaign/$target
mkdir -p "$camp/found"
cd "$camp"
"$bin" -max_total_time="$secs" -jobs="$jobs" -workers="$jobs" -max_len=65536 -timeout=30 -rss_limit_mb=4096 \
  -print_final_stats=1 found "$build/fuzz-run/corpus-$target" > campaign.log 2>&1 || {
  echo "the campaign stopped on a crash, leak or timeout: $camp (crash-*, leak-*, timeout-*; fuzz-*.log)"
  exit 1
}
execs=0
for log in fuzz-*.log; do
  n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  execs=$((execs + ${n:-0}))
  echo "$log: $(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1 || true)," \
    "peak RSS $(sed -n 's/^stat::peak_rss_mb: *//p' "$log") MB"
done
echo "$target: $execs executions in $secs s on $jobs workers"
committed=$src/tests/fuzz/corpus/$target
rm -rf merged && mkdir -p merged "$committed"
"$bin" -merge=1 -max_len=65536 merged "$committed" found > merge.log 2>&1
rm -rf "$committed" && mv merged "$committed"
echo "$committed: $(ls "$committed" | wc -l) inputs, $(du -sh "$committed" | cut -f1)" \
  "($(grep -o 'MERGE-OUTER: [0-9]* new files with [0-9]* new features' merge.log | tail -1 || true))"
