#!/usr/bin/env bash
# Issue 39, item 6: papaya's per-GPU model of Megatron-LM runs against the
# published figures of Korthikanti et al. 2022 ("Reducing Activation
# Recomputation in Large Transformer Models", arXiv 2205.05198): GPT 22B,
# 175B, 530B and 1T on A100-80GB with tensor parallelism 8, sequence 2048,
# the paper's pipeline and micro-batches (bench/networks/megatron-*.json).
# Each network is profiled on this CPU at three fractions of its shape (2 of
# its blocks) and modelled whole; `papaya predict` prices the paper's layout.
# Then Narayanan et al. 2021's weak-scaling runs (1.7B-1T, up to 3,072
# GPUs, data parallelism too), all held out: teraFLOP/s a GPU.
#
# Printed (Markdown): activation memory per GPU of the first pipeline stage
# (a micro-batch's times those in flight) under tensor parallelism alone,
# with sequence parallelism, with selective recompute (recompute-attention:
# each attention core again in backward) without and with sequence
# parallelism, and with full recompute (Figure 1 and the percentages of
# Figure 7), the last also less what the embedding's layers save (its
# dropout mask and token ids), which the paper's count leaves out; weights +
# gradients + optimizer state of a stage past the embedding, with papaya's
# half-precision weight copies (18 bytes a parameter either way); the iteration's time with full recompute and with
# selective recompute and sequence parallelism (Table 5) by the kernel model
# of the layers as Megatron-LM runs them (model/catalog/layer_kernels.h:
# nothing fitted to any run), and beside it
# the roofline at one compute efficiency for every FLOP (0.5, papaya's
# typical one before the kernel model: `--compute-efficiency 0.5`).
# The paper's figures are transcribed in calculon-ai/calculon @ caa4b11f,
# calculon/llm/validation.py.
#
#   bench/published_runs.sh [build folder]     (default build)
#   MODELS=DIR keeps the profiled models there, and uses those it finds.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
command -v jq >/dev/null || { echo "published_runs: needs jq (apt-get install jq)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
models=${MODELS:-$out}

# name gpus p v micro-batch global-batch | paper: weights+optimizer GiB, TP activations GiB (Figure 1),
# +SP, selective, selective+SP and full recompute as % of TP (Figure 7), iteration s with full
# recompute and with selective+SP (Table 5)
runs="22b 8 1 1 4 4 45.5625 59.25 66.84 49.42 16.18 7.64 1.42 1.10
175b 64 8 3 1 64 45.5625 66.84375 62.04 56.53 18.49 8.71 18.13 13.75
530b 280 35 3 1 280 31.640625 114.0234375 58.31 62.04 20.27 9.42 49.05 37.83
1t 512 64 1 1 512 32.958984375 131.25 58.31 62.04 20.27 9.42 94.42 71.49"

# Narayanan et al. 2021 (arXiv 2104.04473), Table 1, weak scaling with full recompute: name gpus t p v
# micro-batch global-batch | paper: teraFLOP/s a GPU (their count, recompute's FLOPs included) | whether
# the gradients' all-reduce overlapped backward (the script's DDP=torch: PyTorch's buckets) or followed it
# (DDP=local: Megatron-LM's own, after backward). Layouts from Megatron-LM's examples/sc21/run_table_1.sh
# @ 6985e589; throughput from its README's table (images/cases_april2021.png).
weak="1.7b 32 1 1 1 16 512 137 on
3.6b 64 2 1 1 16 512 138 on
7.5b 128 4 1 1 16 512 142 on
18.4b 256 8 1 1 8 1024 135 on
39.1b 512 8 2 1 4 1536 138 off
76.1b 1024 8 4 3 2 1792 140 off
145.6b 1536 8 8 2 2 2304 148 off
310.1b 1920 8 16 2 1 2160 155 off
530b 2520 8 35 3 1 2520 163 off
1t 3072 8 64 1 1 3072 163 off"

layout() {  # gpus t p v global-batch: a layout on A100-80GB, 8 a node
  echo "--hardware A100-80GB --gpus $1 --gpus-per-node 8 --tp $2 --pp $3 --vp $4 --global-batch $5"
}
profile() {  # name gpus t p v micro-batch global-batch: its model, once
  [ -f "$models/$1.model.json" ] && return
  "$build/papaya" recommend --network "bench/networks/megatron-$1.json" --precision bf16 $(layout "$2" "$3" "$4" "$5" "$7") \
    --micro-batch "$6" --plans recompute-all --budget 80GiB --out "$models/$1.plan.json" --json > /dev/null 2> "$out/$1.err" || true
  [ -f "$models/$1.model.json" ] || { echo "published_runs: $1: $(tail -1 "$out/$1.err")" >&2; exit 1; }
}
while read -r name gpus p v mb gb _; do profile "$name" "$gpus" 8 "$p" "$v" "$mb" "$gb"; done <<< "$runs"
while read -r name gpus t p v mb gb _; do profile "$name" "$gpus" "$t" "$p" "$v" "$mb" "$gb"; done <<< "$weak"

predict() {  # name gpus t p v mb gb, then predict's own options
  local name=$1 gpus=$2 t=$3 p=$4 v=$5 mb=$6 gb=$7
  shift 7
  "$build/papaya" predict "$models/$name.model.json" --batch "$mb" $(layout "$gpus" "$t" "$p" "$v" "$gb") --json "$@"
}
# Time as Megatron-LM runs the layers (--emit megatron: its kernels where they
# differ from papaya's executor's, layer_kernels.h); memory as papaya holds it.
full_time() { predict "$@" --emit megatron --sp off --plan recompute-all | jq '.plans[0].iteration_s'; }

roofline=0.5

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
echo "profile: $build/papaya recommend --network bench/networks/megatron-NAME.json --precision bf16 LAYOUT --micro-batch B --plans recompute-all --budget 80GiB"
echo "predict: $build/papaya predict NAME.model.json --batch B LAYOUT --sp off|on --plan keep|recompute-attention|recompute-all [--compute-efficiency $roofline] --json"
echo "LAYOUT: --hardware A100-80GB --gpus N --gpus-per-node 8 --tp 8 --pp P --vp V --global-batch G (the paper's)"
echo
echo "| model | weights+grads+optimizer GiB | activations, TP GiB | with SP GiB | selective GiB | selective + SP GiB | full recompute GiB | full recompute less the embedding's GiB | iteration s, full recompute, kernel model | roofline at $roofline | selective + SP, kernel model | roofline at $roofline |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
selective_time() { predict "$@" --emit megatron --sp on --plan recompute-attention | jq '.plans[0].iteration_s'; }
while read -r name gpus p v mb gb paper_static paper_tp paper_sp paper_sel paper_seqsel paper_full paper_time paper_seqsel_time; do
  run="$name $gpus 8 $p $v $mb $gb"
  predict $run --sp off --plan keep > "$out/tp.json"
  predict $run --sp on --plan keep > "$out/sp.json"
  predict $run --sp off --plan recompute-attention > "$out/sel.json"
  predict $run --sp on --plan recompute-attention > "$out/seqsel.json"
  predict $run --sp off --plan recompute-all > "$out/full.json"
  acts() { jq '.plans[0].stages[0] | .activation_bytes * .in_flight / 1073741824' "$1"; }
  # What the layers before the first block save a sample (the embedding's token ids, its dropout's mask):
  # whole on every rank without SP, as under full recompute here.
  embedding=$(jq '[.layers | (map(.path | startswith("blocks.")) | index(true)) as $first | .[:$first][]
                   | .saved[]?.storage_bytes_per_sample] | add // 0' "$models/$name.model.json")
  blocks_full=$(jq --argjson e "$embedding" --argjson mb "$mb" \
    '.plans[0].stages[0] | (.activation_bytes - $e * $mb) * .in_flight / 1073741824' "$out/full.json")
  # A stage past the embedding: the paper counts the blocks' weights alone.
  static=$(jq '.plans[0].stages | (if length > 1 then .[1] else .[0] end) | (.static_bytes + .weight_copies_bytes) / 1073741824' "$out/tp.json")
  python3 - "$name" "$static" "$(acts "$out/tp.json")" "$(acts "$out/sp.json")" "$(acts "$out/sel.json")" \
    "$(acts "$out/seqsel.json")" "$(acts "$out/full.json")" "$blocks_full" \
    "$(full_time $run)" "$(full_time $run --compute-efficiency "$roofline")" \
    "$(selective_time $run)" "$(selective_time $run --compute-efficiency "$roofline")" \
    "$paper_static" "$paper_tp" "$paper_sp" "$paper_sel" "$paper_seqsel" "$paper_full" "$paper_time" "$paper_seqsel_time" <<'PY'
import sys
name = sys.argv[1]
(static, tp, sp, sel, seqsel, full, blocks_full, time, roofline, sel_time, sel_roofline,
 p_static, p_tp, p_sp, p_sel, p_seqsel, p_full, p_time, p_sel_time) = map(float, sys.argv[2:])
p_sp, p_sel, p_seqsel, p_full = (x / 100 * p_tp for x in (p_sp, p_sel, p_seqsel, p_full))
cell = lambda ours, theirs: f"{ours:.2f} ({theirs:.2f}) {100 * (ours / theirs - 1):+.1f}%"
print(f"| {name.upper()} | {cell(static, p_static)} | {cell(tp, p_tp)} | {cell(sp, p_sp)} | {cell(sel, p_sel)} | "
      f"{cell(seqsel, p_seqsel)} | {cell(full, p_full)} | {cell(blocks_full, p_full)} | {cell(time, p_time)} | {cell(roofline, p_time)} | "
      f"{cell(sel_time, p_sel_time)} | {cell(sel_roofline, p_sel_time)} |")
PY
done <<< "$runs"
echo
echo "each cell: papaya (paper) error"
echo
echo "Narayanan et al. 2021, Table 1 (full recompute), teraFLOP/s a GPU by the paper's count 96BsLh^2(1 + s/6h + V/16Lh) over papaya's iteration time (gradients' all-reduce overlapped with backward or after it, as each run's DDP did):"
echo
echo "| model | GPUs | t x p (v) | d | all-reduce | iteration s, kernel model | TFLOP/s a GPU, kernel model | with papaya's executor's attention kernels | iteration s, roofline at $roofline | TFLOP/s a GPU, roofline at $roofline |"
echo "|---|---|---|---|---|---|---|---|---|---|"
executor_time() { predict "$@" --sp off --plan recompute-all | jq '.plans[0].iteration_s'; }
while read -r name gpus t p v mb gb paper overlap; do
  run="$name $gpus $t $p $v $mb $gb"
  layers=$(jq .layers "bench/networks/megatron-$name.json")
  hidden=$(jq .d_model "bench/networks/megatron-$name.json")
  python3 - "$name" "$gpus" "$t" "$p" "$v" "$gb" "$layers" "$hidden" "$overlap" "$paper" \
    "$(full_time $run --overlap-grad-reduce "$overlap")" "$(executor_time $run --overlap-grad-reduce "$overlap")" \
    "$(full_time $run --overlap-grad-reduce "$overlap" --compute-efficiency "$roofline")" <<'PY'
import sys
name, gpus, t, p, v, gb, layers, hidden, overlap = sys.argv[1:10]
gpus, t, p, v, gb, L, h = map(int, (gpus, t, p, v, gb, layers, hidden))
paper, kernels, executor, roofline = map(float, sys.argv[10:])
s, vocab = 2048, 51200
flops = 96 * gb * s * L * h * h * (1 + s / (6 * h) + vocab / (16 * L * h))
rate = lambda seconds: flops / (seconds * gpus) / 1e12
cell = lambda ours: f"{ours:.0f} ({paper:.0f}) {100 * (ours / paper - 1):+.1f}%"
print(f"| {name.upper()} | {gpus} | {t} x {p}" + (f" ({v})" if v > 1 else "") + f" | {gpus // (t * p)} | "
      f"{'overlapped' if overlap == 'on' else 'after backward'} | {kernels:.2f} | {cell(rate(kernels))} | "
      f"{cell(rate(executor))} | {roofline:.2f} | {cell(rate(roofline))} |")
PY
done <<< "$weak"
