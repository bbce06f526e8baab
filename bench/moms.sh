#!/usr/bin/env bash
# Activation memory and throughput of the memory optimizations: every plan
# of PLANS on every network of NETWORKS, in fp32 and bf16, on the CPU.
# Prints a Markdown table; the runs' JSON goes to $OUT. Columns:
#   stored      bytes the last step stored for backward (all strategies)
#   after fwd   allocated when forward ends, less static bytes (weights,
#               gradients, AdamW state): the stored tensors and what is live
#   peak        allocator peak over forward and backward, less static bytes
#   x           keep's figure over this plan's
#   samples/s   over the measured steps (after 2 warm-up steps)
# Usage: bench/moms.sh  (about 30 minutes on 2 cores)
#        NETWORKS=gpt-tiny PRECISIONS=fp32 PLANS="keep invert" bench/moms.sh
set -euo pipefail
cd "$(dirname "$0")/.."
papaya=${PAPAYA:-build/papaya}
out=${OUT:-build/bench-moms}
mkdir -p "$out"
networks=${NETWORKS:-"gpt-tiny bert-tiny vit-tiny resnet-tiny bench/networks/gpt-12x256.json bench/networks/gpt2-small-seq128.json"}
precisions=${PRECISIONS:-"fp32 bf16"}
plans=${PLANS:-"keep recompute-all quantize-8 quantize-4 quantize-2 adaptive-4 invert recompute-all+quantize-4 quantize-2+invert"}

batch_of() { case "$1" in gpt2-small*) echo 2 ;; gpt-12x256) echo 8 ;; *) echo 32 ;; esac; }
steps_of() { case "$1" in gpt2-small*) echo 4 ;; *) echo 8 ;; esac; }

echo "papaya $("$papaya" --version | cut -d' ' -f2-); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
echo
echo "| network | prec. | batch | plan | stored MiB | after fwd MiB | x | peak MiB | x | samples/s | x | final loss |"
echo "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for network in $networks; do
  name=$(basename "$network" .json)
  for precision in $precisions; do
    keep_json=""
    for plan in $plans; do
      json="$out/$name-$precision-$plan.json"
      "$papaya" train --network "$network" --precision "$precision" --batch "$(batch_of "$name")" \
        --steps "$(steps_of "$name")" --plan "$plan" --json > "$json"
      [ "$plan" = keep ] && keep_json=$json
      jq -r --slurpfile keep "${keep_json:-$json}" '
        def mib: . / 1048576 * 100 | round / 100;
        def held: .forward_end_bytes - .static_bytes;
        def ratio(a; b): (a / b * 10 | round / 10);
        $keep[0] as $k
        | "| \(.network) | \(.precision) | \(.batch) | \(.plan) | \([.stored_bytes[]] | add | mib) "
          + "| \(held | mib) | \(ratio($k | held; held)) | \(.activation_bytes | mib) | \(ratio($k.activation_bytes; .activation_bytes)) "
          + "| \(.samples_per_s * 100 | round / 100) | \(ratio(.samples_per_s; $k.samples_per_s)) | \(.final_loss * 1000 | round / 1000) |"' "$json"
    done
  done
done
echo
echo "device: $(jq -r .device_name "$keep_json")"
