#!/usr/bin/env bash
# Benchmark (d) of issue 7: the planner's solve time against the number of
# layers, on synthetic GPT-like models of 48 to 664 layers, for the
# per-layer search at a fixed batch and with the batch chosen, on a GPU
# target (every strategy, swapping over a 1 GB/s link) and on the CPU.
# Target: a 500-layer network planned in under 1 s.
# Also times `papaya recommend` (profile gpt-tiny at 1,2,4, fit, plan) on
# the CPU: target under 3 minutes on 2 cores with no GPU.
# Usage: bench/planner_speed.sh [build folder]   (default build; built with PAPAYA_TARGETS=all scripts/build.sh, or scripts/test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
repeats=${PAPAYA_BENCH_REPEATS:-3}

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "command: $build/bench/planner_speed --repeats $repeats (median of $repeats runs per cell)"
echo
"$build/bench/planner_speed" --repeats "$repeats"
echo
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "command: time $build/papaya recommend --network gpt-tiny --device cpu --out $out/plan.json"
start=$(date +%s.%N)
"$build/papaya" recommend --network gpt-tiny --device cpu --out "$out/plan.json" > "$out/recommend.txt"
end=$(date +%s.%N)
printf "papaya recommend: %.2f s wall\n" "$(echo "$end - $start" | bc)"
head -3 "$out/recommend.txt"
