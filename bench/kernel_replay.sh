#!/usr/bin/env bash
# The kernel model against a GPU's own per-layer times: the stored H200
# profiles of Qwen2-0.5B (bench/data/h200-qwen2-0.5b: 1024 tokens, fp32, at
# 1/16, 2/16, 3/16 of its shape and whole, batches 1, 2, 4), each priced as
# if a CPU had taken it (its layers' kernels on the catalog's H200) and set
# against what the H200 measured (bench/kernel_replay.cpp).
# Usage: bench/kernel_replay.sh [BUILD_DIR]   (seconds)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
source bench/h200_profiles.sh  # $tmp: the profiles, unpacked
"$build/bench/kernel_replay" "$tmp"/qwen2-0.5b-{1,2,3}-16.profile.json "$tmp/qwen2-0.5b-whole.profile.json"
