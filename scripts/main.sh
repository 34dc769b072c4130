#!/usr/bin/env bash
# The main-job command: installs what it needs, builds, and runs the main samples: they trace
# their models into graphs and print them; sample 1 saves its archive and runs it read back
# from the file. (The standalone loader program arrives with [loader].)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stage.sh
trap print_stages EXIT
stage "install dependencies" bash scripts/install_deps.sh main
stage "configure" cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
stage "build samples (-j2)" cmake --build build -j2 --target two_x_plus_y ten_mul elman_rnn
stage "trace, save, read back and run: 2*x + y" build/samples/two_x_plus_y build/two_x_plus_y.amber
stage "trace and run: ten muls" build/samples/ten_mul
stage "trace and run: Elman RNN" build/samples/elman_rnn
