#!/usr/bin/env bash
# The test command: installs what it needs (Debian packages), configures, builds with -j2,
# runs every test stage with ctest, and prints how long each stage took. Idempotent: a
# second run reuses the build folder. CI=true turns warnings into errors.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stage.sh
trap print_stages EXIT
werror=OFF
[[ ${CI:-} == true ]] && werror=ON
stage "install dependencies" bash scripts/install_deps.sh test
stage "configure" cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DAMBER_BUILD_TESTS=ON -DAMBER_WERROR=$werror
stage "build (-j2)" cmake --build build -j2
stage "tests (ctest)" ctest --test-dir build --output-on-failure -V
