#!/usr/bin/env bash
# Issue 38: the HTML report of each command that writes one, as the README
# shows it. llama-tiny is profiled (batches 1, 2, 4) and fitted; then
# `predict --html` (batch 4), `plan --html` (a 2.5 MiB budget), `recommend
# --html` (mlp-tiny, 64 MiB) and `validate --html` (mlp-tiny, keep and
# quantize-4 at batches 4 and 8) write their pages, and headless Chromium
# screenshots each into bench/report-COMMAND.png (1280 px wide), printing the
# seconds each page took to write and to render.
#
#   bench/report_screenshots.sh [build folder]     (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
browser=$(command -v chromium-headless-shell || command -v chromium || true)
[ -n "$browser" ] || { echo "report_screenshots: needs chromium-headless-shell (scripts/setup.sh installs it)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
papaya() { "$build/papaya" "$@"; }
seconds() {  # the seconds a command takes, its output (and a browser's log) dropped
  local start
  start=$(date +%s.%N)
  "$@" >/dev/null 2>"$out/log" || { cat "$out/log" >&2; exit 1; }
  printf '%.2f' "$(echo "$(date +%s.%N) - $start" | bc)"
}

papaya profile --network llama-tiny --batch 1,2,4 --out "$out/p.json" >/dev/null
papaya fit "$out/p.json" --out "$out/m.json" >/dev/null
declare -A commands=(
  [predict]="predict $out/m.json --batch 4"
  [plan]="plan $out/m.json --budget 2.5MiB"
  [recommend]="recommend --network mlp-tiny --budget 64MiB --out $out/plan.json"
  [validate]="validate --network mlp-tiny --batches 4,8 --plans keep,quantize-4 --steps 3"
)
echo "| report | written (s) | rendered (s) | page |"
echo "|---|---|---|---|"
for name in predict plan recommend validate; do
  # shellcheck disable=SC2086
  written=$(seconds papaya ${commands[$name]} --html "$out/$name.html")
  rendered=$(seconds "$browser" --no-sandbox --disable-gpu --hide-scrollbars --virtual-time-budget=5000 \
    --window-size=1280,1900 --screenshot="bench/report-$name.png" "file://$out/$name.html")
  echo "| $name | $written | $rendered | $(du -k "$out/$name.html" | cut -f1) KB |"
done
