#!/usr/bin/env bash
# The shape axis on a GPU, replayed on any machine from stored profiles
# (bench/data/h200-qwen2-0.5b: Qwen2-0.5B at 1024 tokens on an H200, at
# 1/16, 2/16, 3/16 of its shape and whole, batches 1, 2, 4): what the
# fractions carried to the whole shape predict against what the whole
# profile does, per layer kind, at each batch of BATCHES (default 8 16).
# Usage: bench/shape_replay.sh [BUILD_DIR]   (seconds)
# New profiles: scripts/gpu/fraction_profiles.sh OUT on the GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
source bench/h200_profiles.sh  # $tmp: the profiles, unpacked
for batch in ${BATCHES:-8 16}; do
  "$build/bench/shape_replay" 16 "$batch" "$tmp"/qwen2-0.5b-{1,2,3}-16.profile.json "$tmp/qwen2-0.5b-whole.profile.json"
  echo
done
