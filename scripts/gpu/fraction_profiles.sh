#!/usr/bin/env bash
# The profiles behind the shape axis on a GPU, kept for replay elsewhere:
# Qwen2-0.5B at 1024 tokens profiled on CUDA at 1/16, 2/16 and 3/16 of its
# shape (as `--profile-parts 16` cuts it) and whole, at batches 1, 2, 4, as
# OUT_DIR/qwen2-0.5b-{1-16,2-16,3-16,whole}.profile.json: what
# bench/shape_replay.sh sets against each other on any machine (what the
# fractions' time scaling gets wrong is found there, not in a lease).
#   scripts/gpu/fraction_profiles.sh OUT_DIR [PAPAYA]
set -uo pipefail
out=${1:?usage: scripts/gpu/fraction_profiles.sh OUT_DIR [PAPAYA]}
papaya=${2:-build-gpu/papaya}
mkdir -p "$out"
# shellcheck source=/dev/null
[ -f .deps/unpack.sh ] && source .deps/unpack.sh > /dev/null
"$papaya" import-hf configs/hf/qwen2-0.5b.json --seq-len 1024 --out "$out/qwen2-0.5b-whole.json" > /dev/null || exit 1
# The cut of model/catalog/shape_fraction.cpp at 16 parts: tokens, head
# dimensions, MLP width and vocabulary, each k/16 of the whole
# (bench/shape_replay refuses profiles that are not papaya's own cut).
for k in 1 2 3; do
  python3 - "$out/qwen2-0.5b-whole.json" "$out/qwen2-0.5b-$k-16.json" "$k" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
k = int(sys.argv[3])
part = lambda size: k * ((size + 15) // 16)
doc.update(seq_len=part(doc["seq_len"]), d_model=doc["heads"] * part(doc["d_model"] // doc["heads"]),
           mlp_hidden=part(doc["mlp_hidden"]), vocab=part(doc["vocab"]))
json.dump(doc, open(sys.argv[2], "w"), indent=1)
EOF
done
for shape in 1-16 2-16 3-16 whole; do
  start=$(date +%s)
  timeout 200 "$papaya" profile --network "$out/qwen2-0.5b-$shape.json" --device cuda --batch 1,2,4 \
    --out "$out/qwen2-0.5b-$shape.profile.json" > "$out/profile-$shape.log" 2>&1
  echo "profile $shape rc $? ($(( $(date +%s) - start )) s)"
done
