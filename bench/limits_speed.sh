#!/usr/bin/env bash
# The first answer's speed (issue 39, item 2): `papaya limits --network` on
# every shipped HuggingFace config (configs/hf/), at its default sequence
# length or SEQ_LEN, on the hardware HARDWARE. A large text transformer is
# profiled at three fractions of its shape and modelled whole, so that each
# answers in seconds; target: under 1 minute each on a 2-core CPU. Prints a
# Markdown table (config, wall seconds, what the notice said, the largest
# batch of keep and of the best row on the first hardware entry).
#
# A config that gives no answer within LIMIT_S seconds (default 600) is
# stopped and its row says so.
#
#   bench/limits_speed.sh [build folder]      (default build)
#   SEQ_LEN=4096 CONFIGS="configs/hf/llama-2-7b.json" bench/limits_speed.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
hardware=${HARDWARE:-A100-80GB,H100-SXM-80GB}
configs=${CONFIGS:-$(ls configs/hf/*.json)}
command -v jq >/dev/null || { echo "limits_speed: needs jq (apt-get install jq)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "command: $build/papaya limits --network CONFIG ${SEQ_LEN:+--seq-len $SEQ_LEN }--hardware $hardware --json"
echo
echo "| config | wall s | profiled | keep's largest batch | largest batch of any row |"
echo "|---|---|---|---|---|"
for config in $configs; do
  name=$(basename "$config" .json)
  start=$(date +%s.%N)
  status=0
  timeout "${LIMIT_S:-600}" "$build/papaya" limits --network "$config" ${SEQ_LEN:+--seq-len "$SEQ_LEN"} --hardware "$hardware" \
    --json > "$out/$name.json" 2> "$out/$name.err" || status=$?
  if [ "$status" -eq 124 ]; then
    printf "| %s | > %s | no answer | | |\n" "$name" "${LIMIT_S:-600}"
  elif [ "$status" -eq 0 ]; then
    end=$(date +%s.%N)
    how=$(grep -o 'profiling [^(]*' "$out/$name.err" | head -1 | sed 's/ *$//' || true)
    first=${hardware%%,*}
    keep=$(jq -r --arg h "$first" '[.[] | select(.hardware == $h and .strategy == "keep")][0].max_batch' "$out/$name.json")
    best=$(jq -r --arg h "$first" '[.[] | select(.hardware == $h) | .max_batch] | max' "$out/$name.json")
    printf "| %s | %.1f | %s | %s | %s |\n" "$name" "$(echo "$end - $start" | bc)" "${how:-whole}" "$keep" "$best"
  else
    printf "| %s | - | refused: %s | | |\n" "$name" "$(tail -1 "$out/$name.err" | cut -c1-120)"
  fi
done
