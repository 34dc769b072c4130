#!/usr/bin/env bash
# Runs one sample and checks that it succeeded and printed what it demonstrates.
# Usage: check_sample.sh SAMPLE_EXECUTABLE REGEX...   (each extended regex must match a line)
set -uo pipefail
exe=$1
shift
out=$("$exe" 2>&1)
rc=$?
printf '%s\n' "$out"
if ((rc != 0)); then
  echo "check_sample: $(basename "$exe") exited with $rc" >&2
  exit 1
fi
for re in "$@"; do
  if ! grep -Eq -- "$re" <<<"$out"; then
    echo "check_sample: $(basename "$exe") did not print a line matching: $re" >&2
    exit 1
  fi
done
