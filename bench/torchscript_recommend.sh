#!/usr/bin/env bash
# Each TorchScript archive trained with the plan `papaya recommend` wrote for
# it, as a user would run the two: recommend with its defaults (a budget
# half-way between the static bytes and keep's peak at batch 8, the batch with
# the most samples/s within it), then train with the plan file at the plan's
# batch. Checks that the run stays within the budget, and prints its peak and
# samples/s against the plan's prediction (targets 3 % and 15 %, as
# prediction_accuracy.sh's).
#
#   bench/torchscript_recommend.sh                       # every archive of bench/torchscript_models.py
#   MODELS="siamese nanogpt" BUDGET=12MiB bench/torchscript_recommend.sh
#   CPU=0 bench/torchscript_recommend.sh                 # recommend and train pinned to core 0 (taskset)
#
# Needs Debian's python3-torch and python3-torchvision (to write the archives;
# papaya loads them without Python) and jq. Writes under $OUT; exits 1 if a
# run leaves its budget.
set -euo pipefail
cd "$(dirname "$0")/.."

papaya=${PAPAYA:-build/papaya}
out=${OUT:-build/bench/torchscript-recommend}
budget=${BUDGET:-}
steps=${STEPS:-20}
python=${PYTHON:-/usr/bin/python3}
chosen=${MODELS:-}

"$python" -c "import torch, torchvision" 2>/dev/null ||
  { echo "torchscript_recommend: needs python3-torch and python3-torchvision (apt-get install python3-torchvision)" >&2; exit 2; }
command -v jq >/dev/null || { echo "torchscript_recommend: needs jq (apt-get install jq)" >&2; exit 2; }
pin=()
[ -z "${CPU:-}" ] || pin=(taskset -c "$CPU")

mkdir -p "$out/models"
# shellcheck disable=SC2086  # the models' names, one word each
"$python" bench/torchscript_models.py save "$out/models" $chosen
models=$(tail -n +2 "$out/models/parameters.csv" | cut -d, -f1)

echo "| model | batch | budget | plan | peak predicted / measured | error | within budget | samples/s predicted / measured | error |"
echo "|---|---|---|---|---|---|---|---|---|"
outside=0
for m in $models; do
  echo "== $m: recommend, then train with its plan" >&2
  "${pin[@]}" "$papaya" recommend --network "$out/models/$m.pt" ${budget:+--budget "$budget"} --device cpu \
    --out "$out/$m.plan.json" --json >"$out/$m.recommend.json"
  batch=$(jq '.batch' "$out/$m.recommend.json")
  "${pin[@]}" "$papaya" train --network "$out/models/$m.pt" --plan "$out/$m.plan.json" --batch "$batch" --steps "$steps" \
    --device cpu --json >"$out/$m.train.json"
  jq -r --arg m "$m" --slurpfile run "$out/$m.train.json" '
    def mib: . / 1048576 * 100 | round / 100;
    def pct(p; m): ((p - m) / m * 1000 | round / 10) as $e | "\(if $e >= 0 then "+" else "" end)\($e)";
    $run[0] as $r |
    "| \($m) | \(.batch) | \(.budget_bytes | mib) MiB | \(.name) | \(.peak_bytes | mib) / \($r.peak_bytes | mib) MiB | \(pct(.peak_bytes; $r.peak_bytes))% | \(if $r.peak_bytes <= .budget_bytes then "yes" else "**no**" end) | \(.samples_per_s * 10 | round / 10) / \($r.median_samples_per_s * 10 | round / 10) | \(pct(.samples_per_s; $r.median_samples_per_s))% |"' \
    "$out/$m.recommend.json"
  jq -e --slurpfile run "$out/$m.train.json" '$run[0].peak_bytes <= .budget_bytes' "$out/$m.recommend.json" >/dev/null ||
    outside=$((outside + 1))
done
echo
echo "torchscript_recommend: $outside run(s) over their budget; data in $out"
[ "$outside" -eq 0 ]
