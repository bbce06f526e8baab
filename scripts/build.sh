#!/usr/bin/env bash
# Configures and builds papaya into build/ (or $PAPAYA_BUILD_DIR): the
# papaya executable only, or with PAPAYA_TARGETS=all every target (the
# tests, the benchmarks' drivers). Extra arguments go to the CMake configure step.
# The compiler is clang++ (or $CXX): with a precompiled header it instantiates
# LibTorch's templates once, not in every source, and builds papaya in about
# half the time g++ takes (bench/RESULTS.md).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${PAPAYA_BUILD_DIR:-build}
jobs=${PAPAYA_JOBS:-$(nproc)}
if [ ! -f "$build/CMakeCache.txt" ]; then
  CXX=${CXX:-clang++} cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
fi
cmake --build "$build" -j "$jobs" --target "${PAPAYA_TARGETS:-papaya}"
