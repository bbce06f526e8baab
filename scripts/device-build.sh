#!/usr/bin/env bash
# Run on the GPU machine, in the project root: unpacks .deps (see
# device-pack.sh), builds papaya against PyTorch's LibTorch with CUDA into
# build-gpu/, and runs the whole test suite. Logs go to $OUT when it is set.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-build-gpu/logs}
mkdir -p "$out"
# shellcheck disable=SC1091
source .deps/unpack.sh
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_PREFIX_PATH="$torch_prefix;$CMAKE_PREFIX_PATH" 2>&1 | tee "$out/configure.log"
cmake --build build-gpu -j "$(nproc)" 2>&1 | tail -n 50 | tee "$out/build.log"
set +e
ctest --test-dir build-gpu --output-on-failure -j 4 2>&1 | tee "$out/ctest.log"
