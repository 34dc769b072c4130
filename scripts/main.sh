#!/usr/bin/env bash
# The main-job command: installs what it needs, builds, and runs the main sample. Until
# tracing and the standalone loader land, the sample runs eager models on the CPU and
# prints their outputs. Idempotent: a second run reuses the build folder.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stage.sh
trap print_stages EXIT
stage "install dependencies" bash scripts/install_deps.sh main
stage "configure" cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
stage "build samples (-j2)" cmake --build build -j2 --target two_x_plus_y mm_add
stage "run: 2*x + y" build/samples/two_x_plus_y
stage "run: x.mm(x) + t" build/samples/mm_add
