#!/usr/bin/env bash
# Checks that a change of papaya's code changed none of its answers: runs a
# fixed set of commands (fit, predict, limits, plan with and without
# hardware, data parallelism and a variance budget, LLM layouts searched,
# fixed and emitted, data parallelism asked as a layout, fit --measurements,
# hardware, networks, and bad input, training layouts refused among it)
# with two papaya executables on the same profiles, taken once by the
# first, and compares what each printed, its exit code and every file it
# wrote, byte for byte (JSON numbers are printed to the last bit).
# Usage: scripts/compare-outputs.sh OLD_PAPAYA NEW_PAPAYA   (exit 1 on any difference)
set -euo pipefail
old=$(realpath "$1")
new=$(realpath "$2")
source_dir=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
in=$work/in
mkdir -p "$in"

echo "profiling with $old (inputs for both)"
for net in gpt-tiny llama-tiny bert-hf-tiny resnet-tiny; do
  "$old" profile --network "$net" --out "$in/$net.profile.json" >/dev/null
done
for s in 16 32 64; do
  "$old" profile --network llama-tiny --seq-len "$s" --batch 1,2,4 --out "$in/llama$s.profile.json" >/dev/null
done

# Runs every command with papaya $1, writing into $2 (the same relative paths for both).
run_all() {
  local papaya=$1 out=$2 n=0
  mkdir -p "$out"
  cd "$out"
  run() {
    n=$((n + 1))
    set +e
    "$papaya" "$@" >"$n.out" 2>"$n.err"
    echo "exit $?" >>"$n.out"
    set -e
    echo "$n: $*" >>index
  }
  for net in gpt-tiny llama-tiny bert-hf-tiny resnet-tiny; do
    run fit "$in/$net.profile.json" --out "$net.model.json"
    run fit "$in/$net.profile.json" --out "$net.model2.json" --json
    run predict "$net.model.json" --batch 8 --json
    run predict "$net.model.json" --batch 8 --plan recompute-all
    run predict "$net.model.json" --batch 16 --hardware A100-80GB --json
    run predict "$net.model.json" --batch 16 --hardware H100-SXM-80GB --gpus 8 --zero 2 --json
    run limits "$net.model.json" --hardware A100-40GB,H100-SXM-80GB,V100-16GB
    run limits "$net.model.json" --hardware H100-SXM-80GB --gpus 4 --link PCIe-4-x16 --json
    run plan "$net.model.json" --budget 64MiB --json --out "$net.plan1.json"
    run plan "$net.model.json" --budget 40MiB
    run plan "$net.model.json" --budget 2GiB --hardware A100-80GB --batch 64 --json
    run plan "$net.model.json" --budget 30GiB --hardware H100-SXM-80GB --gpus 8 --json --out "$net.plan2.json"
    run plan "$net.model.json" --budget 12GiB --hardware V100-16GB --gpus 4 --link ethernet-10g --variance 0.1
  done
  run fit "$in/llama16.profile.json" "$in/llama32.profile.json" "$in/llama64.profile.json" --seq-len 256 --out seq.model.json
  run plan seq.model.json --budget 256MiB --json
  run fit --measurements "$source_dir/bench/data/papaya-v100.csv"
  run fit --measurements "$source_dir/bench/data/papaya-v100.csv" --json
  run fit --measurements "$source_dir/bench/data/papaya-v100-multi.csv" --gpus 2,4,8 --link NVLink-2 --gradients bert-large=1336MB
  run hardware
  run networks
  run plan gpt-tiny.model.json --budget 1KiB
  run predict gpt-tiny.model.json --batch 0
  run limits --network nope
  run plan gpt-tiny.model.json --budget 1GiB --zero 2
  run predict gpt-tiny.model.json --batch 4 --gpus 4
  # LLM layouts: searched, fixed in part, emitted for the engines, and refused.
  run plan llama-tiny.model.json --budget 30GiB --hardware H100-SXM-80GB --gpus 8 --gpus-per-node 8 --json
  run plan llama-tiny.model.json --budget 30GiB --hardware H100-SXM-80GB --gpus 8 --gpus-per-node 8 --tp 2 --pp 2 --emit megatron
  run plan llama-tiny.model.json --budget 30GiB --hardware H100-SXM-80GB --gpus 8 --gpus-per-node 8 --emit torchtitan
  run plan llama-tiny.model.json --budget 30GiB --hardware H100-SXM-80GB --gpus 4 --gpus-per-node 4 --global-batch 8 --pp 2 --emit papaya
  run predict llama-tiny.model.json --batch 2 --hardware H100-SXM-80GB --gpus 4 --tp 2 --json
  run predict llama-tiny.model.json --batch 2 --hardware H100-SXM-80GB --gpus 4 --pp 2 --global-batch 8 --link ethernet-10g --json
  run limits llama-tiny.model.json --hardware H100-SXM-80GB,A100-80GB --gpus 8 --gpus-per-node 8 --tokens 1e9 --json
  run predict llama-tiny.model.json --batch 2 --hardware H100-SXM-80GB --gpus 6 --tp 3
  run predict llama-tiny.model.json --batch 1 --hardware H100-SXM-80GB --gpus 4 --pp 2 --global-batch 2
  run plan llama-tiny.model.json --budget 30GiB --hardware H100-SXM-80GB --gpus 4 --emit torchtitan --zero 1
  run predict llama-tiny.model.json --batch 2 --hardware H100-SXM-80GB --gpus 4 --tp 4 --zero 1
  run plan resnet-tiny.model.json --budget 30GiB --hardware H100-SXM-80GB --gpus 4 --gpus-per-node 4
  # Data parallelism asked as a layout: every other degree 1.
  run predict resnet-tiny.model.json --batch 16 --hardware H100-SXM-80GB --gpus 8 --tp 1 --json
  run predict gpt-tiny.model.json --batch 4 --tp 1 --pp 1
  run plan llama-tiny.model.json --budget 30GiB --hardware H100-SXM-80GB --gpus 8 --tp 1 --pp 1 --vp 1 --cp 1 --ep 1 --json
  run limits llama-tiny.model.json --hardware H100-SXM-80GB --gpus 8 --tp 1 --pp 1 --vp 1 --cp 1 --ep 1 --tokens 1e9
  run plan gpt-tiny.model.json --budget 1GiB --hardware H100-SXM-80GB --gpus 8 --plans keep,recompute-all
  run predict gpt-tiny.model.json --batch 16 --hardware H100-SXM-80GB --gpus 16 --zero 1 --json
  run plan gpt-tiny.model.json --budget 1GiB --hardware A100-80GB --gpus 32 --inter-node-link InfiniBand-NDR
  # Training layouts refused before any rank starts.
  run train --network llama-tiny --nproc 2 --pp 2 --micro-batches 1
  run train --network llama-tiny --nproc 2 --tp 2 --zero 1
  run train --network llama-tiny --sp off
  cd - >/dev/null
}

run_all "$old" "$work/old"
run_all "$new" "$work/new"
differences=0
commands=$(wc -l <"$work/old/index")
while read -r line; do
  n=${line%%:*}
  for stream in out err; do
    if ! cmp -s "$work/old/$n.$stream" "$work/new/$n.$stream"; then
      echo "differs ($stream): papaya${line#*:}"
      diff "$work/old/$n.$stream" "$work/new/$n.$stream" | head -6 | sed 's/^/    /' || true  # diff exits 1 on a difference
      differences=$((differences + 1))
    fi
  done
done <"$work/old/index"
for file in "$work"/old/*.json; do
  name=$(basename "$file")
  if ! cmp -s "$file" "$work/new/$name"; then
    echo "differs: the file $name"
    differences=$((differences + 1))
  fi
done
files=$(ls "$work"/old/*.json | wc -l)
echo "compare-outputs: $commands commands and $files files written; $differences difference(s)"
[ "$differences" -eq 0 ]
