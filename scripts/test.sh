#!/usr/bin/env bash
# Set-up, build, and every test: the command CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
ctest --test-dir "${PAPAYA_BUILD_DIR:-build}" --output-on-failure -j "${PAPAYA_JOBS:-$(nproc)}"
