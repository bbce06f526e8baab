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
#   REPEATS=3 bench/torchscript_accuracy.sh             # each profile and run 3 times (prediction_accuracy.sh),
#                                                       # and 3 pairs of eager and keep steps
#   CPU=0 bench/torchscript_accuracy.sh                 # every profile and run pinned to core 0 (taskset)
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

# Keep's step against PyTorch eager's: each pair run back to back, so that a
# slow moment of a shared machine (this VM's last a minute and move a step
# by a third) falls on both, REPEATS times; the median of each and of the
# pairs' ratios.
jemalloc=$(ldconfig -p | awk '/libjemalloc.so.2 .*x86-64/ && !found { print $NF; found = 1 }')  # reads on: no SIGPIPE under pipefail
repeats=${REPEATS:-1}
pin=()
[ -z "${CPU:-}" ] || pin=(taskset -c "$CPU")
echo "| model | batch | threads | PyTorch eager samples/s | papaya keep samples/s | papaya / eager (median of $repeats, range) |"
echo "|---|---|---|---|---|---|"
for b in $batches; do
  for m in $models; do
    for r in $(seq 1 "$repeats"); do
      LD_PRELOAD=$jemalloc "${pin[@]}" "$python" bench/torchscript_models.py eager "$out/models" "$b" "$steps" "$m" >"$out/eager.$m.$b.r$r.csv"
      "${pin[@]}" "$papaya" train --network "$out/models/$m.pt" --plan keep --batch "$b" --steps "$steps" --device cpu --json \
        >"$out/$m.pt.eager-pair.$b.r$r.train.json"
      tail -n 1 "$out/eager.$m.$b.r$r.csv" | cut -d, -f3,5 | tr '\n' ,
      jq -r '.median_samples_per_s' "$out/$m.pt.eager-pair.$b.r$r.train.json"
    done | awk -F, -v m="$m" -v b="$b" '
      { threads = $1; eager[NR] = $2; ours[NR] = $3; ratio[NR] = $3 / $2 }
      function median(a, n,   i, j, t, s) {
        for (i = 1; i <= n; i++) s[i] = a[i]
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (s[j] < s[i]) { t = s[i]; s[i] = s[j]; s[j] = t }
        return n % 2 ? s[(n + 1) / 2] : (s[n / 2] + s[n / 2 + 1]) / 2
      }
      END {
        lo = hi = ratio[1]
        for (i = 2; i <= NR; i++) { if (ratio[i] < lo) lo = ratio[i]; if (ratio[i] > hi) hi = ratio[i] }
        printf "| %s | %s | %s | %.1f | %.1f | %.2fx (%.2fx-%.2fx) |\n", m, b, threads, median(eager, NR), median(ours, NR), median(ratio, NR), lo, hi
      }'
  done
done
