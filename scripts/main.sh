#!/usr/bin/env bash
# The main-job command: installs what it needs, builds the libraries, the amber tool and the
# ResNet-18 sample, installs them into build/install, traces ResNet-18 (seeded weights) and
# saves it, builds the service sample against the installed package (it links only the
# runtime), loads the archive there and prints the first five logits, then inspects and
# benchmarks the archive with the amber tool. Idempotent: a second run reuses build/.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stage.sh
trap print_stages EXIT
stage "install dependencies" bash scripts/install_deps.sh main
stage "configure" cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DAMBER_BUILD_TESTS=OFF
stage "build (-j2)" cmake --build build -j2 --target amber_runtime amber_runtime_static amber amber_cli amber_import \
  amber_export_onnx amber_quantize resnet18
stage "install to build/install" cmake --install build --prefix build/install
stage "trace and save ResNet-18" build/samples/resnet18 build/resnet18.amber
stage "inspect the archive" build/install/bin/amber inspect build/resnet18.amber
stage "build the service" bash -c "cmake -S samples/resnet18_service -B build/service -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=$PWD/build/install >/dev/null && cmake --build build/service"
stage "load and run in the service" build/service/resnet18_service build/resnet18.amber
stage "benchmark (amber bench)" build/install/bin/amber bench build/resnet18.amber --iters 20
