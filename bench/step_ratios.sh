#!/usr/bin/env bash
# The step time of the memory optimizations against keep's: each plan of
# PLANS on each network of NETWORKS at batch 32, with 1 and with 2 threads.
# The plans run in turn, ROUNDS times over, so that a slow spell of this
# shared machine falls on all of them; each figure is the median over the
# rounds of each run's median step. Prints a Markdown table.
# Usage: bench/step_ratios.sh  (about 5 minutes on 2 cores)
#        NETWORKS=resnet-tiny THREADS=1 ROUNDS=3 bench/step_ratios.sh
set -euo pipefail
cd "$(dirname "$0")/.."
papaya=${PAPAYA:-build/papaya}
networks=${NETWORKS:-"resnet-tiny bench/networks/gpt-12x128.json"}
plans=${PLANS:-"keep quantize-4 quantize-2+invert"}
threads_list=${THREADS:-"1 2"}
rounds=${ROUNDS:-5}
batch=${BATCH:-32}
steps=${STEPS:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "papaya $("$papaya" --version | cut -d' ' -f2-); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; batch $batch, $rounds rounds of $steps steps"
echo
echo "| network | threads | plan | median step ms | x keep |"
echo "|---|---:|---|---:|---:|"
for network in $networks; do
  name=$(basename "$network" .json)
  for threads in $threads_list; do
    for round in $(seq "$rounds"); do
      for plan in $plans; do
        OMP_NUM_THREADS=$threads "$papaya" train --network "$network" --batch "$batch" --steps "$steps" --plan "$plan" \
          --json | jq '.median_step_seconds' >> "$work/$name-$threads-$plan"
      done
    done
    keep_ms=""
    for plan in $plans; do
      ms=$(sort -g "$work/$name-$threads-$plan" | awk '{v[NR] = $1} END {m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.3f", m * 1000}')
      [ -z "$keep_ms" ] && keep_ms=$ms
      echo "| $name | $threads | $plan | $ms | $(awk -v a="$ms" -v b="$keep_ms" 'BEGIN {printf "%.2f", a / b}') |"
    done
  done
done
