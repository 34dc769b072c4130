#!/usr/bin/env bash
# The main-job command: installs what it needs, builds, and runs the main samples. Until
# the archive and the standalone loader land, the samples trace their models into graphs,
# print them, and run them in the same process.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stage.sh
trap print_stages EXIT
stage "install dependencies" bash scripts/install_deps.sh main
stage "configure" cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
stage "build samples (-j2)" cmake --build build -j2 --target two_x_plus_y ten_mul elman_rnn
stage "trace and run: 2*x + y" build/samples/two_x_plus_y
stage "trace and run: ten muls" build/samples/ten_mul
stage "trace and run: Elman RNN" build/samples/elman_rnn
