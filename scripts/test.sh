#!/usr/bin/env bash
# Set-up, build, and every test: the command CI runs (.ci/run).
# --sanitize: the same, built with ASan + UBSan into build-sanitize/ (or
# $PAPAYA_BUILD_DIR), with the suppressions of scripts/sanitize/.
# Last, each fuzz harness runs briefly under libFuzzer (scripts/fuzz.sh,
# $PAPAYA_FUZZ_SECONDS each, default 3; 0 leaves it out), so that a loader
# that regresses on new input fails here; the seeds alone run as tests.
set -euo pipefail
cd "$(dirname "$0")/.."
export PAPAYA_TARGETS=all  # the tests and everything else, not the executable alone
if [ "${1:-}" = --sanitize ]; then
  export PAPAYA_BUILD_DIR=${PAPAYA_BUILD_DIR:-build-sanitize}
  supp=$PWD/scripts/sanitize
  export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_stack_use_after_return=1:strict_init_order=1}
  export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$supp/lsan.supp:print_suppressions=0}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp}
  scripts/setup.sh
  scripts/build.sh -DPAPAYA_SANITIZE=ON
else
  scripts/setup.sh
  scripts/build.sh -DPAPAYA_WERROR=ON  # a warning fails the build (a configured build dir keeps its setting)
fi
scripts/format.sh --check  # every C++ source as clang-format writes it (scripts/format.sh formats them)
python3 scripts/check-includes.py  # no two units include each other in a circle
python3 scripts/check-flag-names.py  # flag names only in cli/
ctest --test-dir "${PAPAYA_BUILD_DIR:-build}" --output-on-failure -j "${PAPAYA_JOBS:-$(nproc)}"
fuzz_seconds=${PAPAYA_FUZZ_SECONDS:-3}
if [ "$fuzz_seconds" != 0 ]; then
  scripts/fuzz.sh "$fuzz_seconds"
fi
