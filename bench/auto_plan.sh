#!/usr/bin/env bash
# The planner's done-when check (issue 6): with a budget half-way between
# the static bytes and keep's peak, `papaya train --plan auto` must stay
# within the budget and reach at least 0.95x the samples/s of the fastest
# whole-network combination that also fits, all measured the same way.
#
#   bench/auto_plan.sh                         # gpt-tiny, batch 32, 30 steps
#   NETWORK=vit-tiny BATCH=16 bench/auto_plan.sh
#   BUDGET=7MiB bench/auto_plan.sh             # a budget of your own
#
# Needs jq. Writes every run under $OUT and prints a Markdown table for
# bench/RESULTS.md, then the verdict; exits 1 if the check fails.
set -euo pipefail
cd "$(dirname "$0")/.."

papaya=${PAPAYA:-build/papaya}
out=${OUT:-build/bench/auto-plan}
network=${NETWORK:-gpt-tiny}
batch=${BATCH:-32}
steps=${STEPS:-30}

command -v jq >/dev/null || { echo "auto_plan: needs jq (apt-get install jq)" >&2; exit 2; }
mkdir -p "$out"

train() {  # plan, output file, extra arguments
  local plan=$1 file=$2
  shift 2
  "$papaya" train --network "$network" --plan "$plan" --batch "$batch" --steps "$steps" --device cpu --json "$@" >"$file"
}

echo "== $network batch $batch: keep, for the budget" >&2
train keep "$out/keep.json"
static=$(jq '.static_bytes' "$out/keep.json")
keep_peak=$(jq '.peak_bytes' "$out/keep.json")
budget=${BUDGET:-$(((static + keep_peak) / 2))B}

echo "== auto within $budget" >&2
train auto "$out/auto.json" --budget "$budget"
budget_bytes=$(jq '.budget_bytes' "$out/auto.json")

echo "| plan | peak predicted / measured | fits | samples/s predicted / measured |"
echo "|---|---|---|---|"
jq -r --argjson budget "$budget_bytes" '"| auto (per-layer) | \(.predicted.peak_bytes | floor) / \(.peak_bytes) B | \(if .peak_bytes <= $budget then "yes" else "no" end) | \(.predicted.samples_per_s * 10 | round / 10) / \(.samples_per_s * 10 | round / 10) |"' "$out/auto.json"

best_plan="" best_rate=0
for r in "" recompute-all; do
  for c in "" quantize-8 quantize-4 quantize-2 adaptive-4; do
    for i in "" invert; do
      plan=$(printf '%s+' $r $c $i)
      plan=${plan%+}
      plan=${plan:-keep}
      echo "== $plan" >&2
      train "$plan" "$out/$plan.json"
      peak=$(jq '.peak_bytes' "$out/$plan.json")
      rate=$(jq '.samples_per_s' "$out/$plan.json")
      fits=no
      if ((peak <= budget_bytes)); then
        fits=yes
        if jq -en "$rate > $best_rate" >/dev/null; then best_plan=$plan best_rate=$rate; fi
      fi
      printf '| %s | %s B | %s | %.1f |\n' "$plan" "$peak" "$fits" "$rate"
    done
  done
done

auto_peak=$(jq '.peak_bytes' "$out/auto.json")
auto_rate=$(jq '.samples_per_s' "$out/auto.json")
echo
echo "budget $budget_bytes B (static $static B, keep's peak $keep_peak B)"
verdict=0
if ((auto_peak > budget_bytes)); then
  echo "auto: measured peak $auto_peak B is OVER the budget"
  verdict=1
else
  echo "auto: measured peak $auto_peak B is within the budget"
fi
if [[ -z $best_plan ]]; then
  echo "no whole-network combination fits the budget"
else
  ratio=$(jq -n "$auto_rate / $best_rate")
  printf 'auto: %.1f samples/s = %.2fx the fastest fitting combination, %s (%.1f)\n' "$auto_rate" "$ratio" "$best_plan" "$best_rate"
  if jq -en "$ratio < 0.95" >/dev/null; then verdict=1; fi
fi
exit $verdict
