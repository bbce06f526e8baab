#!/usr/bin/env bash
# Issue 39, item 5: layouts executed here, two ranks over Gloo on loopback,
# against the per-rank model. llama-tiny is profiled once as one process
# (batches 1, 2, 4) and fitted; then each layout trains 4 steps
# (`papaya train --nproc 2 ...`) and `papaya predict` prices it from that
# one-process model: ZeRO-0..3 data parallelism (batch 4 a rank), pipeline
# stages (1F1B, 4 micro-batches of 2) and a tensor-parallel pair (batch 4;
# with and without sequence parallelism),
# each under keep, recompute-all, recompute-attention and quantize-4; then
# four ranks: tensor-parallel pairs as two pipeline stages (with and without
# sequence parallelism) and as two data-parallel ranks (ZeRO-0 to 3), and
# two-stage pipelines as two data-parallel ranks (ZeRO-0 to 3).
#
# Printed (Markdown): each rank's measured peak, the model's, the error;
# and whether the losses are one process's at the same global batch (every
# step; a quantizing plan's first step, its rounding drawn per tensor).
#
#   bench/executed_layouts.sh [build folder]     (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
command -v jq >/dev/null || { echo "executed_layouts: needs jq (apt-get install jq)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
papaya() { "$build/papaya" "$@"; }

papaya profile --network llama-tiny --batch 1,2,4 --out "$out/p.json" >/dev/null
papaya fit "$out/p.json" --out "$out/m.json" >/dev/null

echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; network llama-tiny, fp32, 4 steps"
# A layout's prediction: each stage's peak (pipeline), else the layout's or the data-parallel one's.
model() { jq -r --argjson r "$1" 'if type == "array" then .[0].peak_bytes
  elif (.plans[0].stages | length) > 1 then .plans[0].stages[$r].peak_bytes else .plans[0].peak_bytes end' "$out/model.json"; }
cell() {  # RANK STAGE: a rank's measured peak against its pipeline stage's predicted one
  local measured predicted
  measured=$(jq -r --argjson r "$1" '.ranks[$r].peak_bytes' "$out/ranks.json")
  predicted=$(model "$2")
  python3 -c "m, p = $measured, $predicted; print(f'{m:,.0f} ({p:,.0f}) {100 * (p - m) / m:+.2f}%')"
}
# Reads "name|train options|one process's batch|predict options" lines and
# prints a row a plan: NPROC ranks, two of them (RANK STAGE RANK STAGE) shown.
table() {
  local nproc=$1 first=$2 first_stage=$3 second=$4 second_stage=$5 name train single predict plan steps losses
  echo "| layout | plan | train | predict | rank $first peak (model) error | rank $second peak (model) error | losses |"
  echo "|---|---|---|---|---|---|---|"
  while IFS='|' read -r name train single predict; do
    for plan in keep recompute-all recompute-attention quantize-4; do
      papaya train --network llama-tiny --steps 4 --nproc "$nproc" --timeout 120 --json --plan "$plan" $train >"$out/ranks.json"
      papaya train --network llama-tiny --steps 4 --json --plan "$plan" --batch "$single" >"$out/one.json"
      papaya predict "$out/m.json" --plan "$plan" --json $predict >"$out/model.json"
      steps=$([ "$plan" = quantize-4 ] && echo 1 || echo 4)
      losses=$(jq -s --argjson n "$steps" '[range($n) as $i | ((.[0].losses[$i] - .[1].losses[$i]) | fabs) <= 1e-5 * .[1].losses[$i]]
        | if all then "equal" else "differ" end' "$out/ranks.json" "$out/one.json")
      echo "| $name | $plan | \`train --nproc $nproc $train\` | \`predict $predict\` | $(cell "$first" "$first_stage") | $(cell "$second" "$second_stage") | ${losses//\"/} |"
    done
  done
}

echo
table 2 0 0 1 1 <<'LAYOUTS'
ZeRO-0|--batch 4 --zero 0|8|--batch 4 --gpus 2 --link ethernet-10g --zero 0
ZeRO-1|--batch 4 --zero 1|8|--batch 4 --gpus 2 --link ethernet-10g --zero 1
ZeRO-2|--batch 4 --zero 2|8|--batch 4 --gpus 2 --link ethernet-10g --zero 2
ZeRO-3|--batch 4 --zero 3|8|--batch 4 --gpus 2 --link ethernet-10g --zero 3
PP=2|--batch 2 --pp 2 --micro-batches 4|8|--batch 2 --gpus 2 --pp 2 --global-batch 8 --link ethernet-10g
TP=2|--batch 4 --tp 2 --sp off|4|--batch 4 --gpus 2 --tp 2 --sp off --link ethernet-10g
TP=2, SP|--batch 4 --tp 2 --sp on|4|--batch 4 --gpus 2 --tp 2 --sp on --link ethernet-10g
LAYOUTS

echo
echo "Four ranks (rank 0 and rank 2: the first pair's first rank and the second pair's, the last stage's"
echo "first where the pairs are pipeline stages):"
echo
table 4 0 0 2 1 <<'LAYOUTS'
TP=2 x PP=2, SP|--batch 2 --tp 2 --pp 2 --micro-batches 4 --sp on|8|--batch 2 --gpus 4 --tp 2 --pp 2 --global-batch 8 --sp on --link ethernet-10g
TP=2 x PP=2|--batch 2 --tp 2 --pp 2 --micro-batches 4 --sp off|8|--batch 2 --gpus 4 --tp 2 --pp 2 --global-batch 8 --sp off --link ethernet-10g
TP=2 x DP=2, ZeRO-0|--batch 2 --tp 2 --zero 0|4|--batch 2 --gpus 4 --tp 2 --zero 0 --link ethernet-10g
TP=2 x DP=2, ZeRO-1|--batch 2 --tp 2 --zero 1|4|--batch 2 --gpus 4 --tp 2 --zero 1 --link ethernet-10g
TP=2 x DP=2, ZeRO-2|--batch 2 --tp 2 --zero 2|4|--batch 2 --gpus 4 --tp 2 --zero 2 --link ethernet-10g
TP=2 x DP=2, ZeRO-3|--batch 2 --tp 2 --zero 3|4|--batch 2 --gpus 4 --tp 2 --zero 3 --link ethernet-10g
PP=2 x DP=2|--batch 2 --pp 2 --micro-batches 4 --zero 0|16|--batch 2 --gpus 4 --pp 2 --global-batch 16 --zero 0 --link ethernet-10g
PP=2 x DP=2, ZeRO-1|--batch 2 --pp 2 --micro-batches 4 --zero 1|16|--batch 2 --gpus 4 --pp 2 --global-batch 16 --zero 1 --link ethernet-10g
PP=2 x DP=2, ZeRO-2|--batch 2 --pp 2 --micro-batches 4 --zero 2|16|--batch 2 --gpus 4 --pp 2 --global-batch 16 --zero 2 --link ethernet-10g
PP=2 x DP=2, ZeRO-3|--batch 2 --pp 2 --micro-batches 4 --zero 3|16|--batch 2 --gpus 4 --pp 2 --global-batch 16 --zero 3 --link ethernet-10g
LAYOUTS
