#!/usr/bin/env bash
# The test command: installs what it needs (Debian packages), configures, builds with -j2,
# runs every test stage with ctest, then the sanitizer stages (the suite under ASan+UBSan,
# each fuzzer for AMBER_FUZZ_SECONDS (60), the concurrency tests and intra-op parallelism
# under TSan), and prints how long each stage took. Idempotent: a second run reuses the build folders. CI=true turns
# warnings into errors. AMBER_SANITIZERS=0 skips the sanitizer stages (a quick local run).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stage.sh
trap print_stages EXIT
werror=OFF
[[ ${CI:-} == true ]] && werror=ON
stage "install dependencies" bash scripts/install_deps.sh test
stage "configure" cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DAMBER_BUILD_TESTS=ON -DAMBER_WERROR=$werror
stage "build (-j2)" cmake --build build -j2
# Two tests at a time (-j2): the Python generators (the ONNX zoo's export, the reference data) and
# many tests run on one core, so on two cores they overlap (fixtures keep generators before their
# readers; RUN_SERIAL keeps the installed-package checks alone).
#
# OMP_WAIT_POLICY=PASSIVE: two tests at once on two cores, each with two intra-op threads (Amber's
# OpenMP loops, oneDNN's), and OpenMP's default wait spins: a thread spinning at a barrier holds the
# core its partner needs to get there (on 2026-12-02, with the generated data already made, this
# stage took 297 s spinning and 117 s passive; test_precision 265 -> 99 s, 57 s alone). Idle threads
# sleep instead; what each test checks is unchanged.
test_env=(env OMP_WAIT_POLICY=PASSIVE)
stage "tests (ctest -j2)" "${test_env[@]}" ctest --test-dir build --output-on-failure -V -j2
[[ ${AMBER_SANITIZERS:-1} == 0 ]] && exit 0

# Sanitizer builds: clang, no CUDA. The installed-package checks (install_and_service,
# guide) build other projects against the install, the ONNX zoo (label zoo) runs a dozen
# full-size models and the precision accuracy tests (label accuracy) thousands of calls: they
# run in the main build only.
san=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DAMBER_CUDA=OFF
  -DAMBER_BUILD_TESTS=ON -DAMBER_WERROR=$werror)
stage "asan+ubsan: configure" cmake -S . -B build-asan "${san[@]}" -DAMBER_FUZZ=ON
stage "asan+ubsan: build (-j2)" cmake --build build-asan -j2
# intercept_tls_get_addr=0: clang 14's sanitizer runtime (Debian 12's) takes a dynamic TLS
# block of a dlopen()ed library (libamber_sim.so's thread_local error string) whose address
# is 16 past a page boundary for one with a pre-2.25 glibc header and reads a bogus range,
# and LeakSanitizer's exit-time tracer then dies ("Tracer caught signal 11", test_sim 9 runs
# in 12 here; google/sanitizers#1322; runtimes after LLVM 16 no longer guess). Without the interceptor LSan does
# not scan such blocks, which hold no heap pointer at exit (their threads are joined).
#
# ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16: oneDNN 2.6.3's AMX brgemm kernel generator
# (jit_brgemm_amx_uker.cpp, skipped_bd_mask) reads skipped_bd_mask_buffer_[bcast_dim], one
# size_t past the vector's end, after its last row block, and discards it. With glibc's malloc
# that reads the next chunk's header; ASan's allocator can put the vector flush against the
# unmapped end of its size class's region (seen: a 1920-byte vector ending at a 256 KiB
# boundary while test_e2e made ResNet-18's int8 convolutions after LeNet's), and the read
# faults (upstream has since rewritten the kernel). oneDNN is not instrumented, so below AMX it still
# runs every Amber code path here (bf16 and int8 included: AVX512_CORE_BF16 has both); the
# main test stage runs the AMX kernels. The cap is set only where the processor has AMX: on an
# AVX2 processor (an AMD EPYC without AVX-512, 2026-11-30) oneDNN under that cap faulted while
# iterating attention's matmul implementations (dnnl_primitive_desc_iterator_next, a read of an
# unmapped address, in every test that makes one), and without it every test passes.
onednn_cap=()
grep -qw amx_tile /proc/cpuinfo 2>/dev/null && onednn_cap=(ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16)
asan_env=("${test_env[@]}" ASAN_OPTIONS=allocator_may_return_null=1:intercept_tls_get_addr=0 "${onednn_cap[@]}")
stage "asan+ubsan: tests (ctest -j2)" "${asan_env[@]}" ctest --test-dir build-asan --output-on-failure -j2 \
  -E '^(install_and_service|guide)$' -LE 'zoo|accuracy'
stage "fuzz (${AMBER_FUZZ_SECONDS:-60} s per target)" bash tests/fuzz/run_fuzz.sh build-asan . "${AMBER_FUZZ_SECONDS:-60}"
stage "tsan: configure" cmake -S . -B build-tsan "${san[@]}" -DAMBER_SANITIZE=thread
stage "tsan: build (-j2)" cmake --build build-tsan -j2 --target test_loader test_sim
# Two intra-op threads: Amber's OpenMP loops (LLVM's libomp under clang) run in parallel
# inside each call, and Archer (libarcher.so, Debian's libomp5 package) tells TSan about
# OpenMP's fork, join and barrier synchronisation, so races inside one call are checked
# too. oneDNN's libgomp and libomp are not instrumented: ignore_noninstrumented_modules.
archer=(/usr/lib/llvm-*/lib/libarcher.so)
tsan_env=(env OMP_NUM_THREADS=2 OMP_TOOL_LIBRARIES="${archer[-1]}"
  TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp halt_on_error=1 ignore_noninstrumented_modules=1")
stage "tsan: concurrency and intra-op parallelism" "${tsan_env[@]}" \
  build-tsan/tests/test_loader "[threads],[samples],[resources],[dynamic]"
stage "tsan: concurrency on the simulated device" "${tsan_env[@]}" build-tsan/tests/test_sim "[threads],[replicas]"
