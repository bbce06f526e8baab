#!/usr/bin/env bash
# Prediction accuracy of the layer model (issue 5): profile each network on
# the CPU at batches 1, 2, 4; fit; predict peak memory and samples/s at larger
# batches for each strategy; train with that strategy at those batches; and
# compare. Targets: peak within 3%, samples/s within 15%. The measured
# samples/s are those of the median training step: the steady pace the model
# predicts (from the profile's medians), which a slow moment of this shared
# machine does not move.
#
#   bench/prediction_accuracy.sh                 # gpt-tiny vit-tiny resnet-tiny, batches 16 32
#   NETWORKS=gpt-tiny BATCHES=32 bench/prediction_accuracy.sh
#   NETWORKS="bench/networks/llama-4x128.json bench/networks/bert-silu.json" bench/prediction_accuracy.sh
#   PRECISION=bf16 bench/prediction_accuracy.sh  # activations in bf16
#   PROFILE_BLOCKS=2 NETWORKS=bench/networks/llama-8x256.json bench/prediction_accuracy.sh
#                                                # profile 2 blocks, predict and train all
#   PROFILE_SEQ_LENS="16 32 64" SEQ_LEN=256 NETWORKS=llama-tiny bench/prediction_accuracy.sh
#                                                # profile at 3 lengths, predict and train at another
#
# Needs `papaya profile` (the profiler) and `papaya train --plan` (the
# executor's memory optimizations), and jq. Writes every profile, model,
# prediction and training run under $OUT, a CSV of the comparison, and
# prints it as a Markdown table for bench/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/.."

papaya=${PAPAYA:-build/papaya}
out=${OUT:-build/bench/prediction-accuracy}
networks=${NETWORKS:-gpt-tiny vit-tiny resnet-tiny}
profile_batches=${PROFILE_BATCHES:-1,2,4}
batches=${BATCHES:-16 32}
steps=${STEPS:-30}
precision=${PRECISION:-fp32}
profile_blocks=${PROFILE_BLOCKS:-}
profile_seq_lens=${PROFILE_SEQ_LENS:-}
seq_len=${SEQ_LEN:-}
[ -z "$profile_seq_lens" ] || [ -n "$seq_len" ] || { echo "prediction_accuracy: PROFILE_SEQ_LENS needs SEQ_LEN" >&2; exit 2; }
plans=${PLANS:-keep recompute-all quantize-4 invert recompute-all+quantize-4 quantize-4+invert recompute-all+invert recompute-all+quantize-4+invert}
peak_target=${PEAK_TARGET:-0.03}
rate_target=${RATE_TARGET:-0.15}

command -v jq >/dev/null || { echo "prediction_accuracy: needs jq (apt-get install jq)" >&2; exit 2; }
"$papaya" profile --help >/dev/null 2>&1 || { echo "prediction_accuracy: this papaya has no 'profile' command yet (the profiler)" >&2; exit 2; }
"$papaya" train --help 2>/dev/null | grep -- --plan >/dev/null || { echo "prediction_accuracy: this papaya's train has no --plan yet (the executor's optimizations)" >&2; exit 2; }

mkdir -p "$out"
csv="$out/accuracy.csv"
echo "network,strategy,batch,predicted_peak_bytes,measured_peak_bytes,peak_error,predicted_samples_per_s,measured_samples_per_s,samples_per_s_error" >"$csv"

for network in $networks; do
  net=$(basename "$network" .json)  # a zoo name, or a config file's name
  profiles=()
  for length in ${profile_seq_lens:-${seq_len:-default}}; do
    echo "== $net: profile at $profile_batches${profile_blocks:+ ($profile_blocks blocks)} (sequence: $length)" >&2
    profiles+=("$out/$net.profile.$length.json")
    "$papaya" profile --network "$network" --batch "$profile_batches" --device cpu --precision "$precision" \
      ${profile_blocks:+--profile-blocks "$profile_blocks"} $([ "$length" = default ] || echo --seq-len "$length") --out "${profiles[-1]}" >&2
  done
  "$papaya" fit "${profiles[@]}" ${profile_seq_lens:+--seq-len "$seq_len"} --out "$out/$net.model.json" --json >"$out/$net.fit.json"
  for b in $batches; do
    "$papaya" predict "$out/$net.model.json" --batch "$b" --json >"$out/$net.predict.$b.json"
    for plan in $plans; do
      echo "== $net $plan batch $b: train" >&2
      run="$out/$net.$plan.$b.train.json"
      "$papaya" train --network "$network" ${seq_len:+--seq-len "$seq_len"} --plan "$plan" --batch "$b" --steps "$steps" \
        --device cpu --precision "$precision" --json >"$run"
      jq -r --arg net "$net" --arg plan "$plan" --argjson b "$b" --slurpfile run "$run" '
        .[] | select(.strategy == $plan) |
        [$net, $plan, $b, .peak_bytes, $run[0].peak_bytes,
         ((.peak_bytes - $run[0].peak_bytes) / $run[0].peak_bytes),
         .samples_per_s, $run[0].median_samples_per_s,
         ((.samples_per_s - $run[0].median_samples_per_s) / $run[0].median_samples_per_s)] | @csv' \
        "$out/$net.predict.$b.json" >>"$csv"
    done
  done
done

echo "| network | strategy | batch | peak predicted / measured | error | samples/s predicted / measured | error |"
echo "|---|---|---|---|---|---|---|"
failed=0
while IFS=, read -r net plan b pp mp pe ps ms se; do
  net=${net//\"/}
  plan=${plan//\"/}
  pe_pct=$(awk -v e="$pe" 'BEGIN { printf "%+.1f%%", 100 * e }')
  se_pct=$(awk -v e="$se" 'BEGIN { printf "%+.1f%%", 100 * e }')
  mark=$(awk -v pe="$pe" -v se="$se" -v pt="$peak_target" -v rt="$rate_target" \
    'BEGIN { ok = (pe < 0 ? -pe : pe) <= pt && (se < 0 ? -se : se) <= rt; print ok ? "" : " (missed)" }')
  [ -z "$mark" ] || failed=$((failed + 1))
  printf '| %s | %s | %s | %.2f / %.2f MiB | %s | %.1f / %.1f | %s%s |\n' "$net" "$plan" "$b" \
    "$(awk -v x="$pp" 'BEGIN { print x / 1048576 }')" "$(awk -v x="$mp" 'BEGIN { print x / 1048576 }')" "$pe_pct" "$ps" "$ms" "$se_pct" "$mark"
done < <(tail -n +2 "$csv")
echo >&2
echo "prediction_accuracy: $failed row(s) outside peak ${peak_target} / samples/s ${rate_target}; data in $out" >&2
[ "$failed" -eq 0 ]
