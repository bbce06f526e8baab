#!/usr/bin/env bash
# What only a GPU machine can show, as one run that fits a short lease:
# builds papaya and tests/gpu against the machine's CUDA LibTorch (PyTorch's
# own), runs the GPU tests (fused kernels and swapping against the ATen path,
# the profiler and CUPTI on CUDA), the main job on the GPU, `calibrate` (the
# kernel model's figures measured there), and `validate` on the networks
# CHECKS picks below (predicted against measured peak memory and samples/s).
#
# On the GPU machine, in the project root, with the Debian packages it lacks
# carried in .deps (scripts/gpu/pack-deps.sh .deps):
#   scripts/gpu/check.sh OUT_DIR [CHECKS]
# CHECKS picks the `validate` runs, comma-separated: zoo (gpt2-small),
# archives (torchvision's models scripted), fine-tuning (LoRA and QLoRA),
# shape (Qwen2-0.5B profiled whole, and at fractions of its shape), fp8 (the
# delayed recipe's emulation on llama-tiny); all by
# default; fraction-profiles (scripts/gpu/fraction_profiles.sh: the profiles
# bench/shape_replay.sh replays) only when named. The GPU tests and the main
# job always run.
# Every log, JSON answer and the build's errors land in OUT_DIR; a summary is
# printed. Each step has its own time limit, so one that hangs costs only its
# share; a step that fails does not stop the next.
set -uo pipefail
out=${1:?usage: scripts/gpu/check.sh OUT_DIR [zoo,archives,fine-tuning,shape,fp8]}
checks=",${2:-zoo,archives,fine-tuning,shape,fp8},"
wanted() { [[ $checks == *",$1,"* ]]; }
build=${PAPAYA_GPU_BUILD:-build-gpu}
mkdir -p "$out"
started=$(date +%s)
elapsed() { echo "$(( $(date +%s) - started )) s"; }

# shellcheck source=/dev/null
source .deps/unpack.sh >/dev/null
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  echo "cores $(nproc)"
  g++ --version | head -1
  nvcc --version | tail -1
} > "$out/machine.txt" 2>&1
cat "$out/machine.txt"

torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
if ! cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
     -DCMAKE_PREFIX_PATH="$torch_prefix;$CMAKE_PREFIX_PATH" > "$out/configure.log" 2>&1; then
  echo "configure FAILED ($(elapsed)):"; tail -40 "$out/configure.log"; exit 1
fi
grep "papaya:" "$out/configure.log"

# -k 0: every file that does not compile is named in one run.
timeout 360 ninja -C "$build" -k 0 papaya gpu_tests > "$out/build.log" 2>&1
echo "build rc $? ($(elapsed))"
grep -E "error:|FAILED:|undefined reference" "$out/build.log" | sort -u | head -60

step() {  # NAME SECONDS COMMAND...: one check, its output in OUT_DIR/NAME.{log,err}
  local name=$1 limit=$2 rc
  shift 2
  timeout "$limit" "$@" > "$out/$name.log" 2> "$out/$name.err"
  rc=$?
  echo "$name rc $rc ($(elapsed))"
  [ $rc -eq 0 ] || tail -5 "$out/$name.err"
}
papaya=$build/papaya
if [ -x "$build/tests/gpu_tests" ]; then
  step gpu_tests 240 "$build/tests/gpu_tests" --gtest_output="json:$out/gpu_tests.json"
  grep -E "^\[ +(FAILED|SKIPPED|OK|PASSED) +\]|Failure" "$out/gpu_tests.log" | head -30
fi
if [ -x "$papaya" ]; then
  step recommend 90 "$papaya" recommend --device cuda
  tail -25 "$out/recommend.log"
  # The kernel model's figures on this GPU (docs/gpu-time.md): the file to ship
  # beside its catalog entry, with the date and software it ran.
  step calibrate 300 "$papaya" calibrate --device cuda --out "$out/calibrated.json" --json
  cat "$out/calibrate.log"
  # The fused inverted backward against keep (it ran as ATen passes before).
  wanted zoo && step validate-gpt2-small 150 "$papaya" validate --network gpt2-small --seq-len 256 --device cuda \
    --profile-batches 1,2,4 --batches 8,32 --plans keep,invert,quantize-4 --steps 6 --json
  # The shape axis on a GPU: the same network and runs, modelled from its own
  # shape and from 1/16, 2/16 and 3/16 of it (profiled in the tensors' own
  # bytes: the CUDA allocator's 512-byte blocks are no polynomial of the
  # shape). PAPAYA_SHAPE_PARTS picks the cuts, "1 16" by default.
  if wanted shape; then
    for parts in ${PAPAYA_SHAPE_PARTS:-1 16}; do
      step "validate-qwen2-parts$parts" 200 "$papaya" validate --network configs/hf/qwen2-0.5b.json --seq-len 1024 \
        --profile-parts "$parts" --device cuda --profile-batches 1,2,4 --batches 8,16 \
        --plans keep,recompute-all,quantize-4 --steps 4 --json
    done
  fi
  # Fine-tuning: the frozen base stored in nf4 and loaded for each matmul on
  # the GPU, LoRA on all seven projections, under keep, recompute and quantize.
  if wanted fine-tuning; then
    step validate-llama-tiny-qlora 120 "$papaya" validate --network llama-tiny-lora --base-weights nf4 --device cuda \
      --profile-batches 2,4,8 --batches 16,64 --plans keep,recompute-all,quantize-4 --steps 6 --json
    # 6 timed steps a row: with 2, keep's measured rate moved 12 % between leases.
    step validate-qwen2-qlora 300 "$papaya" validate --network configs/hf/qwen2-0.5b.json --seq-len 512 \
      --lora 16 --lora-targets q,k,v,o,gate,up,down --base-weights nf4 --device cuda \
      --profile-batches 1,2,4 --batches 8,16 --plans keep,recompute-all,quantize-4 --steps 8 --json
  fi
  # FP8 recipes as the executor emulates them on the GPU (1-byte codes read
  # back in bf16: FP8's memory under the CUDA allocator, not its speed).
  if wanted fp8; then
    step validate-llama-tiny-fp8 150 "$papaya" validate --network llama-tiny --precision fp8-delayed --device cuda \
      --profile-batches 2,4,8 --batches 16,64 --plans keep,recompute-all,quantize-4 --steps 6 --json
  fi
  # A user's network: torchvision's models scripted here (python3-torchvision
  # is on that machine), profiled and trained through the archive.
  if wanted archives; then
    if timeout 120 python3 bench/torchscript_models.py save "$out/models" resnet18 vit_tiny > "$out/models.log" 2>&1; then
      step validate-resnet18-archive 150 "$papaya" validate --network "$out/models/resnet18.pt" --device cuda \
        --profile-batches 4,8,16 --batches 32,128 --plans keep,recompute-all,quantize-4,swap --steps 6 --json
      step validate-vit-archive 150 "$papaya" validate --network "$out/models/vit_tiny.pt" --device cuda \
        --profile-batches 4,8,16 --batches 32,128 --plans keep,recompute-all,quantize-4,invert,swap --steps 6 --json
      rm -f "$out"/models/*.pt  # the archives stay behind: what comes back is the logs
    else
      echo "scripting the models FAILED"; tail -5 "$out/models.log"
    fi
  fi
  wanted fraction-profiles && scripts/gpu/fraction_profiles.sh "$out/fraction-profiles" "$papaya"
  for f in "$out"/validate-*.log; do echo "== $f"; head -c 3000 "$f"; echo; done
fi
echo "done ($(elapsed))"
