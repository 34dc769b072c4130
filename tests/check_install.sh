#!/usr/bin/env bash
# Checks the installed package (a CTest test): installs the build into a fresh prefix, then
#  - libamber_runtime.so has no tracer or nn symbols and no Python or libtorch dependency,
#    and its size is printed;
#  - pkg-config describes both libraries;
#  - the ResNet-18 service sample (samples/resnet18_service, its own CMake project) builds
#    against the installed package with the shared and with the static runtime, and both
#    print the logits the authoring sample printed for the same input;
#  - the multithreaded service sample (sample 10) agrees with a lone call on that archive.
# Usage: check_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
work=$build/install-check
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" > "$work/install.log"
libdir=$(find "$prefix" -name 'libamber_runtime.so' -printf '%h\n' | head -1)
lib=$libdir/libamber_runtime.so
fail() { echo "FAIL: $*" >&2; exit 1; }

real=$(readlink -f "$lib")
echo "installed runtime: $(basename "$real") $(du -h "$real" | cut -f1) ($(stat -c %s "$real") bytes)," \
     "static $(du -h "$libdir/libamber_runtime.a" | cut -f1), authoring libamber.so $(du -h "$(readlink -f "$libdir/libamber.so")" | cut -f1)"
soname=$(readlink -f "$lib" | xargs readelf -d | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[[ $soname == libamber_runtime.so.* ]] || fail "unexpected SONAME '$soname'"
echo "SONAME: $soname"
leaked=$(nm -D --defined-only -C "$lib" | grep -E 'amber::nn::|amber::trace|TracedModule|check_trace|save_archive|archive_bytes' || true)
[[ -z $leaked ]] || fail "the runtime exports authoring symbols:
$leaked"
needed=$(readelf -d "$lib" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | tr '\n' ' ')
echo "runtime NEEDED: $needed"
if grep -qiE 'python|torch|c10' <<< "$needed"; then fail "the runtime depends on Python or libtorch: $needed"; fi
if grep -qE 'cuda|cudnn|cublas' <<< "$needed"; then fail "the runtime maps CUDA libraries: $needed"; fi
PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --modversion amber-runtime amber > /dev/null \
  || fail "pkg-config cannot read amber-runtime.pc / amber.pc"
pc_flags=$(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --cflags --libs amber-runtime)
echo "pkg-config amber-runtime: $pc_flags"

archive=$work/resnet18.amber
"$build/samples/resnet18" "$archive" > "$work/author.log"
want=$(sed -n 's/^eager first five logits: //p' "$work/author.log")
for variant in shared static; do
  flag=OFF
  [[ $variant == static ]] && flag=ON
  cmake -S "$src/samples/resnet18_service" -B "$work/service-$variant" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix" -DAMBER_STATIC=$flag > "$work/service-$variant.log"
  cmake --build "$work/service-$variant" >> "$work/service-$variant.log"
  out=$("$work/service-$variant/resnet18_service" "$archive")
  echo "$out" | sed "s/^/  [$variant] /"
  got=$(sed -n 's/^loaded first five logits: //p' <<< "$out")
  /usr/bin/python3 - "$want" "$got" <<'PY' || fail "$variant service logits differ from eager"
import sys
want = [float(v) for v in sys.argv[1].split()]
got = [float(v) for v in sys.argv[2].split()]
assert len(want) == len(got) == 5, (want, got)
bad = [(w, g) for w, g in zip(want, got) if abs(w - g) > 1e-5 + 1e-4 * abs(w)]
assert not bad, bad
PY
done
# The same program built with the compiler and pkg-config alone.
c++ -O1 "$src/samples/resnet18_service/main.cpp" -o "$work/service-pkgconfig" $pc_flags -Wl,-rpath,"$libdir"
got=$("$work/service-pkgconfig" "$archive" | sed -n 's/^loaded first five logits: //p')
[[ "$got" == "$(sed -n 's/^loaded first five logits: //p' <<< "$out")" ]] || fail "pkg-config build prints '$got'"
echo "  [pkg-config] built with: c++ main.cpp $pc_flags"
if [[ "$(ldd "$work/service-static/resnet18_service")" == *libamber_runtime* ]]; then
  fail "the static service still loads libamber_runtime.so"
fi
# Sample 10: many threads calling the loaded model at once agree with a lone call.
"$build/samples/service_threads" "$archive" 4 5 | sed "s/^/  [service_threads] /"
echo "OK: service built against the installed package (shared and static) matches eager"
