#!/usr/bin/env bash
# Issue 58, item 6: fused attention on this CPU. `papaya validate` on a GPT
# (bench/networks/gpt-4x128-2k.json: learned positions, dropout 0.1, its
# attention's too) and the zoo's Llama (llama-tiny: rotary, grouped-query)
# at 512 and 2,048 tokens under keep, recompute-all and quantize-4: each
# profiled at batches 1, 2 and 4, predicted and trained at two larger
# batches (targets: peak within 3 %, samples/s within 15 %). Then fused
# against materialized attention at 2,048 tokens: one training run of each
# at the same batch, measured step time (the median step's) and peak.
#
#   bench/fused_attention.sh [build folder]          (default build)
#   STEPS=N: training steps a row (default 6, the first 2 left out)
#
# Prints Markdown tables for bench/RESULTS.md; every run's JSON stays in $OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
command -v jq >/dev/null || { echo "fused_attention: needs jq (apt-get install jq)" >&2; exit 2; }
out=${OUT:-$build/bench/fused-attention}
steps=${STEPS:-6}
mkdir -p "$out"

networks="bench/networks/gpt-4x128-2k.json llama-tiny"
batches_at() { [ "$1" = 512 ] && echo 8,16 || echo 4,8; }

echo "| network | tokens | plan | batch | peak predicted / measured | error | samples/s predicted / measured | error |"
echo "|---|---:|---|---:|---|---:|---|---:|"
for network in $networks; do
  net=$(basename "$network" .json)
  for tokens in 512 2048; do
    echo "== $net at $tokens tokens: validate" >&2
    "$build/papaya" validate --network "$network" --seq-len "$tokens" --plans keep,recompute-all,quantize-4 \
      --batches "$(batches_at "$tokens")" --steps "$steps" --json >"$out/$net.$tokens.validate.json"
    jq -r --arg net "$net" --arg tokens "$tokens" '.rows[] |
      "| \($net) | \($tokens) | \(.plan) | \(.batch) | \(.predicted_peak_bytes / 1048576 * 100 | round / 100) / \(.measured_peak_bytes / 1048576 * 100 | round / 100) MiB | \(.peak_error_pct * 100 | round / 100) % | \(.predicted_samples_per_s * 100 | round / 100) / \(.measured_samples_per_s * 100 | round / 100) | \(.samples_per_s_error_pct * 10 | round / 10) % |"' \
      "$out/$net.$tokens.validate.json"
  done
done

echo
echo "| network | tokens | batch | attention | samples/s | peak | held at the end of forward, less the static state |"
echo "|---|---:|---:|---|---:|---:|---:|"
for network in $networks; do
  net=$(basename "$network" .json)
  for attention in fused materialized; do
    echo "== $net at 2048 tokens, $attention: train" >&2
    run="$out/$net.2048.$attention.train.json"
    "$build/papaya" train --network "$network" --seq-len 2048 --attention "$attention" --batch 4 --steps "$steps" --json >"$run"
    jq -r --arg net "$net" --arg attention "$attention" \
      '"| \($net) | 2048 | 4 | \($attention) | \(.median_samples_per_s * 100 | round / 100) | \(.peak_bytes / 1048576 | round) MiB | \((.forward_end_bytes - .static_bytes) / 1048576 | round) MiB |"' "$run"
  done
done
