#!/usr/bin/env bash
# Runs every libFuzzer target for a bounded time on its seed corpus (valid archives of varied
# programs, the golden archive, every checklist case test_archive builds, the committed
# corpus, safetensors files, small ONNX models of ONNX's node tests) and fails on any crash,
# sanitizer report, leak or timeout.
# Prints the executions per target.
# Usage: run_fuzz.sh FUZZ_BUILD_DIR SOURCE_DIR SECONDS_PER_TARGET
set -euo pipefail
build=$(realpath "$1")
src=$(realpath "$2")
secs=$3
work=$build/fuzz-run
rm -rf "$work"
mkdir -p "$work/seeds"
fixture=$build/tests/archive_fixture  # built with the tests, or by tests/fuzz without them
[[ -x $fixture ]] || fixture=$build/tests/fuzz/archive_fixture
"$fixture" --fuzz-seeds "$work/seeds" > /dev/null
"$fixture" "$work/seeds" > /dev/null
cp "$src"/tests/golden/* "$work/seeds/"
# Every checklist case test_archive builds (AMBER_CASE marks; tests/test_util.h), and the
# committed corpus minimised from longer runs (tests/fuzz/corpus/, tests/fuzz/campaign.sh).
# The sanitizer build's test stage (ctest) keeps them in $build/case-seeds: taken from there when
# written since test_archive was built, else written now.
mkdir -p "$work/case-seeds"
if [[ -x $build/tests/test_archive && -n $(find "$build/case-seeds" -name '*.amber' -newer "$build/tests/test_archive" \
  -print -quit 2> /dev/null) ]]; then
  cp "$build"/case-seeds/*.amber "$work/case-seeds/"
elif [[ -x $build/tests/test_archive ]]; then
  AMBER_CASE_SEEDS=$work/case-seeds "$build/tests/test_archive" "[reliability]" > /dev/null 2>&1 ||
    echo "note: test_archive failed while writing case seeds (the test stage reports it)"
fi
echo "case seeds: $(ls "$work/case-seeds" | wc -l)"
total=0
for target in fuzz_archive fuzz_load fuzz_safetensors fuzz_onnx_import; do
  corpus=$work/corpus-$target
  mkdir -p "$corpus"
  if [[ $target == fuzz_safetensors ]]; then
    cp "$work"/seeds/*.safetensors "$corpus/"
  elif [[ $target == fuzz_onnx_import ]]; then
    # ONNX's node tests under 4 KiB (Debian's libonnx-testdata), or ONNX files written here
    node=/usr/share/libonnx-testdata/data/node
    if [[ -d $node ]]; then
      # (no `| head`: under pipefail, head closing the pipe early fails the stage with SIGPIPE)
      mapfile -t models < <(find "$node" -name model.onnx -size -4k | sort)
      for m in "${models[@]:0:300}"; do
        cp "$m" "$corpus/$(basename "$(dirname "$m")").onnx"
      done
    fi
    [[ -n $(ls "$corpus") ]] || printf 'no seeds' > "$corpus/empty"
  else
    cp "$work"/seeds/*.amber "$corpus/"
    cp "$work"/case-seeds/* "$corpus/" 2> /dev/null || true
  fi
  if [[ -d $src/tests/fuzz/corpus/$target ]]; then cp "$src/tests/fuzz/corpus/$target"/* "$corpus/"; fi
  seeds=$(ls "$corpus" | wc -l)
  log=$work/$target.log
  if ! (cd "$work" && "$build/tests/fuzz/$target" -max_total_time="$secs" -max_len=65536 -timeout=30 \
    -rss_limit_mb=4096 -print_final_stats=1 "$corpus" > "$log" 2>&1); then
    tail -60 "$log"
    echo "FAIL: $target: crash, sanitizer report or timeout; the input is saved in $work (crash-*, leak-*, timeout-*)"
    exit 1
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1 || true)
  echo "$target: $execs executions in ${secs} s from $seeds seeds (corpus now $(ls "$corpus" | wc -l); $cov), no crash"
  total=$((total + execs))
done
echo "fuzz: $total executions in total, no crash"
