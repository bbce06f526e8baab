#!/usr/bin/env bash
# Installs the Debian packages papaya needs to build, test and plot, skipping
# those already present. Runs apt-get as root (or through sudo).
set -euo pipefail

packages=(
  clang cmake ninja-build pkg-config  # clang: LibTorch sources compile in half g++'s time (scripts/build.sh)
  clang-format            # the tree's format, checked by the test command (scripts/format.sh --check)
  libomp-dev              # clang's OpenMP: the CPU codec's threads
  libtorch-dev            # LibTorch 1.13 (CPU); a CUDA LibTorch is used instead where found
  libgloo-dev             # Gloo's headers: data-parallel training over LibTorch's c10d
  libceres-dev            # the performance model's fits
  libjemalloc-dev         # the host allocator of papaya's process (CMakeLists.txt says why)
  libcli11-dev            # command line
  nlohmann-json3-dev      # JSON documents
  libvalijson-dev         # JSON Schema validation of configs, plans, profiles
  libgtest-dev libgmock-dev
  gnuplot-nox             # plots (SVG, PNG)
  python3                 # scripts/check-includes.py (the test command)
  dpkg-dev file           # cpack -G DEB: dpkg-shlibdeps finds the packages papaya's libraries come from
  libjs-chart.js          # --html reports draw with Chart.js, inlined
  chromium-headless-shell # the test that opens a report in a browser
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

as_root=()
[ "$(id -u)" -eq 0 ] || as_root=(sudo)
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
