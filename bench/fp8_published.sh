#!/usr/bin/env bash
# FP8 training against torchao's published Llama3-8B rows (its float8
# README: 8 x H100, torchtitan, FSDP, batch 1, 8,192 tokens, per-op selective
# recompute; bf16 47.65 GiB and 6,150 tokens/s, tensorwise 47.77 GiB and
# 7,689.5): papaya's model of Llama 3 8B in each precision, profiled here at
# fractions of its shape, priced for 8 H100s under ZeRO-3 at batch 1 under
# keep and recompute-all, which bracket per-op selective recompute. Prints a
# Markdown table: peak GiB and tokens/s a GPU, each precision.
#
#   bench/fp8_published.sh [build folder]      (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
command -v jq >/dev/null || { echo "fp8_published: needs jq (apt-get install jq)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
tokens=8192 gpus=8

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
echo
echo "| precision | recompute-all: peak, tokens/s a GPU | keep: peak, tokens/s a GPU |"
echo "|---|---|---|"
for precision in amp-bf16 fp8-tensorwise fp8-rowwise fp8-delayed; do
  "$build/papaya" recommend --network configs/hf/llama-3-8b.json --seq-len "$tokens" --precision "$precision" \
    --hardware H100-SXM-80GB --gpus "$gpus" --zero 3 --out "$out/$precision.plan.json" >"$out/$precision.log" 2>&1
  row="| $precision"
  for plan in recompute-all keep; do
    "$build/papaya" predict "$out/$precision.model.json" --batch 1 --gpus "$gpus" --zero 3 --hardware H100-SXM-80GB \
      --plan "$plan" --json >"$out/$precision-$plan.json"
    row+=$(jq -r --argjson t "$tokens" --argjson g "$gpus" \
      '.[0] | " | \(.peak_bytes / 1073741824 * 100 | round / 100) GiB, \(.samples_per_s * $t / $g | round)"' \
      "$out/$precision-$plan.json")
  done
  echo "$row |"
done
