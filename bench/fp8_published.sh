#!/usr/bin/env bash
# FP8 training against torchao's published Llama3-8B rows (its float8
# README: 8 x H100, torchtitan, FSDP, batch 1, 8,192 tokens, per-op selective
# recompute; bf16 47.65 GiB and 6,150 tokens/s, tensorwise 47.77 GiB and
# 7,689.5): papaya's model of Llama 3 8B in each precision, profiled here at
# fractions of its shape, priced for 8 H100s under ZeRO-3 at batch 1 under
# keep and recompute-all, which bracket per-op selective recompute. Prints a
# Markdown table: peak GiB and tokens/s a GPU, each precision.
#
# Then torchtitan's own H100 rows (benchmarks/llama3_h100_202412_torchtitan.md
# of torchtitan: Llama 3.1 8B, FSDP, local batch 2, 8,192 tokens, selective
# recompute; 8 GPUs: bf16 + compile 6,667 tokens/s a GPU and 77.0 GiB, + float8
# 8,532 and 76.8; 128 GPUs: 6,514 and 62.0, + float8 8,380 and 61.8): the
# same models at batch 2 on 8 and 128 GPUs, amp-bf16 and fp8-tensorwise.
#
#   bench/fp8_published.sh [build folder]      (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
command -v jq >/dev/null || { echo "fp8_published: needs jq (apt-get install jq)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
tokens=8192 gpus=8

# " | PEAK GiB, TOKENS/S a GPU" under recompute-all and keep: the model of
# PRECISION at BATCH samples a GPU over GPUS GPUs under ZeRO-3.
plans_row() {
  local precision=$1 batch=$2 world=$3 row=""
  for plan in recompute-all keep; do
    "$build/papaya" predict "$out/$precision.model.json" --batch "$batch" --gpus "$world" --zero 3 \
      --hardware H100-SXM-80GB --plan "$plan" --json >"$out/predicted.json"
    row+=$(jq -r --argjson t "$tokens" --argjson g "$world" \
      '.[0] | " | \(.peak_bytes / 1073741824 * 100 | round / 100) GiB, \(.samples_per_s * $t / $g | round)"' \
      "$out/predicted.json")
  done
  echo "$row"
}

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
echo
echo "| precision | recompute-all: peak, tokens/s a GPU | keep: peak, tokens/s a GPU |"
echo "|---|---|---|"
for precision in amp-bf16 fp8-tensorwise fp8-rowwise fp8-delayed; do
  "$build/papaya" recommend --network configs/hf/llama-3-8b.json --seq-len "$tokens" --precision "$precision" \
    --hardware H100-SXM-80GB --gpus "$gpus" --zero 3 --out "$out/$precision.plan.json" >"$out/$precision.log" 2>&1
  echo "| $precision$(plans_row "$precision" 1 "$gpus") |"
done

echo
echo "| precision | GPUs | recompute-all: peak, tokens/s a GPU | keep: peak, tokens/s a GPU |"
echo "|---|---|---|---|"
for precision in amp-bf16 fp8-tensorwise; do
  for world in 8 128; do echo "| $precision | $world$(plans_row "$precision" 2 "$world") |"; done
done
