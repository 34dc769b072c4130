#!/usr/bin/env bash
# libamber_cuda.so's contract, checked on any machine (no GPU needed): it exports only
# amber_backend_entry; the runtime library has no CUDA dependency; a CPU-only run never maps
# the CUDA backend or the CUDA runtime; asking for a CUDA device without a GPU is one clear
# error (exit status 1, one line naming the device). Usage: check_cuda_library.sh BUILD_DIR AMBER_CLI
set -euo pipefail
build=$1 cli=$2
fail() { echo "FAIL: $*" >&2; exit 1; }

exports=$(nm -D --defined-only "$build/libamber_cuda.so" | awk '{print $3}')
[[ $exports == amber_backend_entry ]] || fail "libamber_cuda.so exports more than its entry: $exports"
echo "libamber_cuda.so exports: $exports"

if readelf -d "$build/libamber_runtime.so" | grep -E 'NEEDED.*(cuda|cudnn|cublas)'; then
  fail "libamber_runtime.so depends on CUDA"
fi
echo "libamber_runtime.so: no CUDA dependency"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build/samples/two_x_plus_y" "$work/m.amber" >/dev/null || fail "samples/two_x_plus_y could not make an archive"
LD_DEBUG=libs "$cli" run "$work/m.amber" >/dev/null 2>"$work/libs" || fail "amber run on the CPU failed"
if grep -E 'calling init: .*(libamber_cuda|libcudart|libcudnn|libcublas)' "$work/libs"; then
  fail "a CPU-only run mapped CUDA"
fi
echo "a CPU-only run maps no CUDA library"

status=0
"$cli" run "$work/m.amber" --device cuda:0 >"$work/out" 2>"$work/err" || status=$?
if [[ $status == 0 ]]; then
  echo "a GPU is present: the no-GPU error is not checked here"
  exit 0
fi
[[ $status == 1 ]] || fail "amber run --device cuda:0 exited $status, expected 1"
[[ $(wc -l <"$work/err") == 1 ]] || fail "expected one line of error, got: $(cat "$work/err")"
grep -q "cuda:0 requested but" "$work/err" || fail "unclear error: $(cat "$work/err")"
echo "without a GPU: $(cat "$work/err")"
