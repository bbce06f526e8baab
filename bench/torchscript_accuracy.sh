#!/usr/bin/env bash
# Real PyTorch models (bench/torchscript_models.py names them: torchvision's
# and common patterns written there: shared modules, positions without the
# batch, chunked data flow, an LSTM, a traced MLP-Mixer) scripted or traced
# to TorchScript archives, then through papaya as a user's network: parameters counted against PyTorch's,
# predicted against measured peak and samples/s per plan and batch
# (prediction_accuracy.sh: targets 3% and 15%), and papaya's keep step
# against PyTorch eager's training step on the same model and threads, and
# the same host allocator as papaya's process, jemalloc (preloaded; with
# glibc's malloc eager spends more than half its step in page faults on
# this machine).
#
#   bench/torchscript_accuracy.sh                       # batches 16 32, plans keep recompute-all quantize-8 quantize-4 invert
#   BATCHES=16 PLANS=keep bench/torchscript_accuracy.sh
#   MODELS="siamese nanogpt" bench/torchscript_accuracy.sh   # some of the models (default: all)
#   REPEATS=3 bench/torchscript_accuracy.sh             # each profile and run 3 times (prediction_accuracy.sh)
#
# Needs Debian's python3-torch and python3-torchvision (the reference only:
# papaya loads the archives without Python) and jq. Writes under $OUT.
set -euo pipefail
cd "$(dirname "$0")/.."

papaya=${PAPAYA:-build/papaya}
out=${OUT:-build/bench/torchscript}
batches=${BATCHES:-16 32}
plans=${PLANS:-keep recompute-all quantize-8 quantize-4 invert}
steps=${STEPS:-20}
python=${PYTHON:-/usr/bin/python3}
chosen=${MODELS:-}

"$python" -c "import torch, torchvision" 2>/dev/null ||
  { echo "torchscript_accuracy: needs python3-torch and python3-torchvision (apt-get install python3-torchvision)" >&2; exit 2; }
command -v jq >/dev/null || { echo "torchscript_accuracy: needs jq (apt-get install jq)" >&2; exit 2; }

mkdir -p "$out/models"
# shellcheck disable=SC2086  # the models' names, one word each
"$python" bench/torchscript_models.py save "$out/models" $chosen
models=$(tail -n +2 "$out/models/parameters.csv" | cut -d, -f1)

echo "| model | parameters (PyTorch) | parameters (papaya) | layers | segments |"
echo "|---|---|---|---|---|"
for m in $models; do
  "$papaya" inspect "$out/models/$m.pt" --json >"$out/$m.inspect.json"
  torch_count=$(grep "^$m," "$out/models/parameters.csv" | cut -d, -f2)
  jq -r --arg m "$m" --arg t "$torch_count" '"| \($m) | \($t) | \(.parameters) | \(.layers) | \(.segments) |"' "$out/$m.inspect.json"
done
echo

networks=""
for m in $models; do networks+=" $out/models/$m.pt"; done
NETWORKS="$networks" PLANS="$plans" BATCHES="$batches" STEPS="$steps" OUT="$out" PAPAYA="$papaya" \
  bench/prediction_accuracy.sh || echo "(rows outside the targets above)"
echo

echo "| model | batch | threads | PyTorch eager samples/s | papaya keep samples/s | papaya / eager |"
echo "|---|---|---|---|---|---|"
for b in $batches; do
  LD_PRELOAD=$(ldconfig -p | awk '/libjemalloc.so.2 .*x86-64/ { print $NF; exit }') \
    "$python" bench/torchscript_models.py eager "$out/models" "$b" "$steps" $chosen >"$out/eager.$b.csv"
  while IFS=, read -r m batch threads step_s eager_rate; do
    papaya_rate=$(jq -r '.median_samples_per_s' "$out/$m.pt.keep.$b.train.json")
    awk -v m="$m" -v b="$batch" -v t="$threads" -v e="$eager_rate" -v p="$papaya_rate" \
      'BEGIN { printf "| %s | %s | %s | %.1f | %.1f | %.2fx |\n", m, b, t, e, p, p / e }'
  done < <(tail -n +2 "$out/eager.$b.csv")
done
