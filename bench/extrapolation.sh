#!/usr/bin/env bash
# How far the layer model's step time extrapolates on this machine, apart from
# run-to-run noise: one profile measures every batch of FIT and CHECK in the
# same process; the model is fitted on the FIT batches alone and predicts the
# step time (keep) at each CHECK batch, which the same profile measured.
#
#   bench/extrapolation.sh                               # gpt-tiny vit-tiny resnet-tiny, fit 1,2,4, check 8,16,32
#   FIT=1,2,4,8 CHECK=16,32 NETWORKS=gpt-tiny bench/extrapolation.sh
#   RUNS=3 bench/extrapolation.sh                        # three profiles of each network
#   PROBE=0 bench/extrapolation.sh                       # without layer probes
#   NETWORKS=bench/networks/vit-4x256.json bench/extrapolation.sh   # a config file
#
# The layers are probed alone at PROBE (default: 16 x the largest FIT batch,
# what `papaya profile --batch FIT` would take).
#
# Needs jq. Writes the profiles and models under $OUT and prints a Markdown
# table: measured and predicted step time and the error of the predicted
# samples/s (positive: the model says faster than the machine ran).
set -euo pipefail
cd "$(dirname "$0")/.."

papaya=${PAPAYA:-build/papaya}
out=${OUT:-build/bench/extrapolation}
networks=${NETWORKS:-gpt-tiny vit-tiny resnet-tiny}
fit=${FIT:-1,2,4}
check=${CHECK:-8,16,32}
runs=${RUNS:-1}
precision=${PRECISION:-fp32}
probe=${PROBE:-$((16 * $(tr , '\n' <<<"$fit" | sort -n | tail -1)))}

command -v jq >/dev/null || { echo "extrapolation: needs jq (apt-get install jq)" >&2; exit 2; }
mkdir -p "$out"

echo "| network | run | fitted on | batch | measured ms | predicted ms | samples/s error |"
echo "|---|---|---|---|---|---|---|"
for net in $networks; do
  for run in $(seq "$runs"); do
    name=$(basename "$net" .json)
    profile="$out/$name.$run.profile.json"
    "$papaya" profile --network "$net" --batch "$fit,$check" --device cpu --precision "$precision" --probe-batch "$probe" --out "$profile" >/dev/null
    # The same profile restricted to the FIT batches.
    jq --argjson fit "[$fit]" '
      [.batches | to_entries[] | select(.value as $b | $fit | index($b)) | .key] as $keep |
      .batches = [$keep[] as $i | .batches[$i]] |
      .iterations = [$keep[] as $i | .iterations[$i]] |
      .layers |= map(.measured = [$keep[] as $i | .measured[$i]]) |
      .segments |= map(.recompute_s = [$keep[] as $i | .recompute_s[$i]] |
                       if .between_s then .between_s = [$keep[] as $i | .between_s[$i]] else . end)' "$profile" >"$out/$name.$run.fit-profile.json"
    "$papaya" fit "$out/$name.$run.fit-profile.json" --out "$out/$name.$run.model.json" >/dev/null
    for b in ${check//,/ }; do
      predicted=$("$papaya" predict "$out/$name.$run.model.json" --batch "$b" --plan keep --json | jq '.[0].seconds')
      jq -r --arg net "$name" --arg run "$run" --arg fit "$fit" --argjson b "$b" --argjson predicted "$predicted" '
        (.batches | index($b)) as $i | .iterations[$i].iteration_s as $measured |
        "| \($net) | \($run) | \($fit) | \($b) | \($measured * 1000 * 100 | round / 100) | \($predicted * 1000 * 100 | round / 100) | \((($measured / $predicted - 1) * 1000 | round) / 10)% |"' "$profile"
    done
  done
done
