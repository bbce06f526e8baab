#!/usr/bin/env bash
# Run here, once, before using the GPU machine: packs the Debian packages it
# lacks into .deps/ (ignored by git; name it in the device run's `carry`):
# the shared set (Ceres, CLI11, nlohmann-json, GoogleTest) plus valijson and
# Gloo's headers (data parallelism over c10d).
set -euo pipefail
cd "$(dirname "$0")/.."
shared=../shared/device/pack-deps.sh
if [ ! -x "$shared" ]; then
  echo "device-pack: $shared not found (it comes with the workplace's shared folder)" >&2
  exit 2
fi
"$shared" .deps
(cd .deps && apt-get download libvalijson-dev libgloo-dev >/dev/null)
du -sh .deps
