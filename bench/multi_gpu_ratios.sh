#!/usr/bin/env bash
# PAPAYA's multi-GPU finding from its one-GPU runs: the one-GPU fits of
# bench/data/papaya-v100-multi.csv carried to 2, 4 and 8 GPUs (papaya fit
# --measurements --gpus) over links of each bandwidth in BANDWIDTHS, and each
# strategy's ratio to `none` beside the ratio the authors measured; then the
# bandwidth whose predictions come closest (least squares over the ratios of
# STRATEGIES for BERT-large and GPT3-small): what the link had to be.
#
#   bench/multi_gpu_ratios.sh
#   BANDWIDTHS="2 4 8 16" STRATEGIES="checkpoint quantize4" bench/multi_gpu_ratios.sh
#
# Gradients exchanged: BERT-large 335M fp32 (HF accelerate's fp16 is autocast:
# fp32 gradients), 1.34 GB; GPT3-small 125M fp16 (fairseq --fp16), 250 MB.
# Needs jq. Prints Markdown tables for bench/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/.."

papaya=${PAPAYA:-build/papaya}
out=${OUT:-build/bench/multi-gpu}
bandwidths=${BANDWIDTHS:-"2 3 4 5 6 8 16"}
strategies=${STRATEGIES:-"checkpoint quantize4"}
latency_us=${LATENCY_US:-20}
data=bench/data/papaya-v100-multi.csv
gradients=bert-large-cased=1.34GB,transformer_lm_gpt3_small=250MB
mkdir -p "$out"

wanted=$(printf '%s\n' $strategies | jq -R . | jq -s .)
for bw in $bandwidths; do
  link="$out/link-$bw.json"
  printf '{"name": "%s GB/s", "bandwidth_gbs": %s, "latency_us": %s, "sources": {"bandwidth": "bench/multi_gpu_ratios.sh", "latency": "bench/multi_gpu_ratios.sh"}}\n' \
    "$bw" "$bw" "$latency_us" > "$link"
  "$papaya" fit --measurements "$data" --gpus 2,4,8 --link "$link" --gradients "$gradients" --json > "$out/fit-$bw.json"
  # network, strategy, gpus, measured, predicted: one row per ratio both sides have.
  jq -r --argjson s "$wanted" '.on_gpus[] | select(.versus_none != null and .measured_versus_none != null)
      | select([.strategy] | inside($s)) | [.network, .strategy, .gpus, .measured_versus_none, .versus_none] | @tsv' \
    "$out/fit-$bw.json" > "$out/ratios-$bw.tsv"
done

# One row per (network, strategy, gpus): measured, then predicted at each bandwidth; then each bandwidth's error.
header="| network | strategy | gpus | measured |" rule="|---|---|---|---|"
for bw in $bandwidths; do header+=" $bw GB/s |" rule+="---|"; done
echo "$header"
echo "$rule"
first=$(echo $bandwidths | cut -d' ' -f1)
paste $(for bw in $bandwidths; do echo "$out/ratios-$bw.tsv"; done) |
  awk -F'\t' '{ row = sprintf("| %s | %s | %d | %.2f |", $1, $2, $3, $4); for (i = 5; i <= NF; i += 5) row = row sprintf(" %.2f |", $i); print row }'
row="| sum of squared errors | | | |" best_bw="" best_err=""
for bw in $bandwidths; do
  err=$(awk -F'\t' '{ e += ($5 - $4) ^ 2 } END { printf "%.3f", e }' "$out/ratios-$bw.tsv")
  row+=" $err |"
  if [ -z "$best_err" ] || awk -v a="$err" -v b="$best_err" 'BEGIN { exit !(a < b) }'; then best_bw=$bw best_err=$err; fi
done
echo "$row"
echo
echo "closest: $best_bw GB/s a GPU (latency $latency_us us; squared ratio errors $best_err over $strategies, 2/4/8 GPUs, BERT-large and GPT3-small)"
