#!/usr/bin/env bash
# Installs the Debian packages Amber needs, and nothing that is already there (so a second
# run is quick and needs no network). Usage: install_deps.sh main|test
#   main: building the libraries and samples
#   test: main + PyTorch (reference data), the test framework, and clang with its sanitizer
#         and libFuzzer runtimes and OpenMP (the sanitizer and fuzzing builds)
set -euo pipefail
what=${1:-test}
pkgs=(build-essential cmake ninja-build pkg-config libdnnl-dev nlohmann-json3-dev catch2 libprotobuf-dev
  protobuf-compiler zlib1g-dev libxxhash-dev libonnx-dev)
if [[ $what == test ]]; then
  # libopenblas0-pthread: PyTorch's matrix products when it writes the reference data (Debian's
  # reference BLAS otherwise: ViT-B/16's forward passes in tests/gen_onnx_zoo.py 82 s -> 3.3 s)
  pkgs+=(python3-torch python3-torchvision libopenblas0-pthread python3-protobuf python3-xxhash python3-onnx
    libonnx-testdata python3-sklearn unzip
    libzip-dev clang libclang-rt-14-dev
    libomp-dev)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "dependencies: all ${#pkgs[@]} Debian packages already installed"
  exit 0
fi
echo "dependencies: installing ${missing[*]}"
sudo=""
[[ $(id -u) -ne 0 ]] && sudo=sudo
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
