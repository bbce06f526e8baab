#!/usr/bin/env bash
# Packs the Debian packages that the GPU machine lacks (Ceres and its solvers,
# CLI11, nlohmann-json, valijson, GoogleTest, jemalloc) into DIR, with unpack-deps.sh
# beside them as unpack.sh. Run here, in the project root:
#   scripts/gpu/pack-deps.sh .deps
# then carry .deps to the GPU machine (scripts/gpu/check.sh sources it).
set -euo pipefail
dir=${1:-.deps}
mkdir -p "$dir"
grep -qxF "/$dir/" .git/info/exclude 2>/dev/null || echo "/$dir/" >> .git/info/exclude
pkgs="libceres-dev libceres3 libgoogle-glog-dev libgoogle-glog0v6 libgflags-dev libgflags2.2
libeigen3-dev libcli11-dev nlohmann-json3-dev libvalijson-dev libgtest-dev libgmock-dev libjemalloc2 libjemalloc-dev libunwind8 libunwind-dev
libamd2 libcamd2 libccolamd2 libcolamd2 libcholmod3 libcxsparse3 libmetis5 libspqr2
libsuitesparseconfig5 libsuitesparse-dev libatlas3-base libatlas-base-dev libgfortran5 libquadmath0"
(cd "$dir" && apt-get download $pkgs 2>&1 | grep -v "^W: Download is performed unsandboxed" >/dev/null || true)
cp "$(dirname "$0")/unpack-deps.sh" "$dir/unpack.sh"
du -sh "$dir"
