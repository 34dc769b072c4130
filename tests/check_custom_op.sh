#!/usr/bin/env bash
# The custom-op sample end to end: the op library loads, the model using its ops traces and
# saves, a service linking only the runtime loads library + archive and matches the eager
# output, and so does `amber run --op-library`; without the library the load fails naming
# every missing op and its namespace; a library of another ABI version is refused naming both.
# Usage: check_custom_op.sh MYOPS.so MODEL_PROGRAM SERVICE AMBER_CLI WRONG_ABI.so WORKDIR
set -euo pipefail
lib=$1 model=$2 service=$3 cli=$4 wrong=$5 work=$6
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
expect() {  # expect EXIT_CODE REGEX -- command...
  local code=$1 regex=$2; shift 3
  local out rc=0
  out=$("$@" 2>&1) || rc=$?
  echo "\$ ${*##*/}"; echo "$out"
  [[ $rc == "$code" ]] || fail "exit code $rc, expected $code"
  grep -Eq -- "$regex" <<<"$out" || fail "output lacks /$regex/"
}
expect 0 "myops::swish_gate\(%.*beta=1.5" -- "$model" "$lib" "$work/model.amber" "$work/expected.safetensors"
expect 0 "with 1 op library; output \[5, 4\], max \|eager - loaded\| " -- "$service" "$work/model.amber" "$work/expected.safetensors" "$lib"
expect 1 "2 unknown ops: myops::soft_clip \(version 1\), myops::swish_gate \(version 1\) \(namespace myops: no op library of it is loaded" \
  -- "$service" "$work/model.amber" "$work/expected.safetensors"
expect 1 "was built for op-library ABI version 2; this Amber has version 1" \
  -- "$service" "$work/model.amber" "$work/expected.safetensors" "$wrong"
expect 1 "cannot be loaded: .*no-such-lib.so" -- "$service" "$work/model.amber" "$work/expected.safetensors" "$work/no-such-lib.so"
expect 0 "output0" -- "$cli" run "$work/model.amber" --op-library "$lib" --inputs "$work/expected.safetensors"
expect 1 "unknown ops: myops::soft_clip" -- "$cli" run "$work/model.amber" --inputs "$work/expected.safetensors"
echo "custom op sample: all checks passed"
