#!/usr/bin/env bash
# Prediction accuracy on networks papaya was not tuned on (issue 22): COUNT
# configs generated from SEED across every family, block type, activation,
# norm, dropout on/off, depth and width (bench/generated_networks.py), plus
# the zoo's tiny ones, each profiled at 1, 2, 4 and compared, predicted
# against trained, at 16 and 32 for six plans (bench/prediction_accuracy.sh).
# Targets: peak memory within 3% for >= 98% of cells and never worse than 5%;
# samples/s within 15% for >= 90%.
#
#   bench/generated_accuracy.sh                      # seed 1, fp32
#   SEED=2 PRECISION=bf16 bench/generated_accuracy.sh
#
# Writes the configs and every run under $OUT; prints the table and the
# error distribution (median, 95th percentile, worst, the worst cells).
set -euo pipefail
cd "$(dirname "$0")/.."

seed=${SEED:-1}
count=${COUNT:-10}
precision=${PRECISION:-fp32}
out=${OUT:-build/bench/generated-accuracy/seed$seed-$precision}
tiny=${TINY:-gpt-tiny bert-tiny vit-tiny resnet-tiny mlp-tiny}

command -v python3 >/dev/null || { echo "generated_accuracy: needs python3" >&2; exit 2; }
mkdir -p "$out"
networks=$(python3 bench/generated_networks.py generate "$seed" "$count" "$out/configs" | tr '\n' ' ')
status=0
OUT="$out" NETWORKS="$networks $tiny" PRECISION="$precision" BATCHES="16 32" STEPS="${STEPS:-20}" \
  PLANS="keep recompute-all quantize-4 quantize-2+invert invert adaptive-4" \
  bench/prediction_accuracy.sh || status=$?
echo
echo "seed $seed, $precision:"
python3 bench/generated_networks.py summarize "$out/accuracy.csv"
exit "$status"
