#!/usr/bin/env bash
# Fuzzes every loader of user input: builds the libFuzzer harnesses of
# tests/fuzz into build-fuzz/ (or $PAPAYA_FUZZ_BUILD_DIR) with clang, runs
# each for SECONDS (default 60) over a copy of its seed corpus
# (tests/fuzz/corpus/<loader>; new inputs stay under the build folder), and
# prints per harness its executions, corpus size and crashes. Exits 1 on any
# crash; the input that crashed is kept beside its log.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
build=${PAPAYA_FUZZ_BUILD_DIR:-build-fuzz}
jobs=${PAPAYA_JOBS:-$(nproc)}

scripts/setup.sh
# clang and its libFuzzer runtime, if missing.
if ! command -v clang++ >/dev/null || ! dpkg -s libclang-rt-dev >/dev/null 2>&1; then
  as_root=()
  [ "$(id -u)" -eq 0 ] || as_root=(sudo)
  echo "fuzz: installing clang and libFuzzer"
  "${as_root[@]}" apt-get update -qq
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends clang libclang-rt-dev >/dev/null
fi

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DPAPAYA_FUZZ=ON
fi
cmake --build "$build" -j "$jobs" --target fuzzers  # the model library and the harnesses (LibTorch only for the archive harness)

export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
failed=0
printf '%-16s %8s %12s %8s %8s\n' harness seeds executions corpus crashes
for seeds in tests/fuzz/corpus/*/; do
  loader=$(basename "$seeds")
  run=$build/fuzz-runs/$loader
  rm -rf "$run"
  mkdir -p "$run/corpus" "$run/crashes" "$run/tmp"
  cp "$seeds"* "$run/corpus/"
  # -timeout: an input that takes 30 s is a hang, reported as a crash (above the 20 s the archive
  # loader gives a child stuck after its fork, executor/torchscript/archive.cpp; a seed loads in about
  # 1.3 s). -rss_limit_mb: LibTorch keeps the types of every archive it loaded (the archive harness:
  # 780 MiB after 1,500 inputs).
  TMPDIR=$(cd "$run" && pwd)/tmp "$build/tests/fuzz/fuzz_$loader" "$run/corpus" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 \
    -artifact_prefix="$run/crashes/" -print_final_stats=1 >"$run/log" 2>&1 || true
  executions=$(awk '/stat::number_of_executed_units/ {print $2}' "$run/log")
  crashes=$(find "$run/crashes" -type f | wc -l)
  printf '%-16s %8d %12s %8d %8d\n' "$loader" "$(find "$seeds" -type f | wc -l)" "${executions:-?}" \
    "$(find "$run/corpus" -type f | wc -l)" "$crashes"
  if [ "$crashes" -gt 0 ] || [ -z "$executions" ]; then
    failed=1
    echo "  see $run/log and $run/crashes/" >&2
  fi
done
exit "$failed"
