#!/usr/bin/env bash
# papaya installed like a tool: `cmake --install` to a temporary prefix, and
# cpack's Debian package unpacked; each papaya, run from an empty folder
# elsewhere, finds its data in share/papaya beside its bin/ (as --version
# says) and answers the main job; PAPAYA_DATA overrides where it looks. The
# package depends on the Debian packages of the libraries papaya links.
#
#   tests/install/install_test.sh BUILD_FOLDER
set -euo pipefail
build=$(cd "$1" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() {  # papaya share-folder
  local papaya=$1 share=$2
  rm -rf "$tmp/elsewhere" && mkdir "$tmp/elsewhere" && cd "$tmp/elsewhere"
  local version
  version=$("$papaya" --version)
  [[ "$version" == *"data: $share)"* ]] || { echo "install_test: $papaya --version: $version (data not in $share)" >&2; exit 1; }
  "$papaya" recommend --network mlp-tiny --budget 64MiB --out plan.json >recommend.txt
  [ -s plan.json ] || { echo "install_test: $papaya recommend wrote no plan" >&2; exit 1; }
  if PAPAYA_DATA="$tmp/nowhere" "$papaya" networks 2>error.txt; then
    echo "install_test: PAPAYA_DATA=$tmp/nowhere was not used" >&2
    exit 1
  fi
  grep -q "PAPAYA_DATA" error.txt || { echo "install_test: $(cat error.txt)" >&2; exit 1; }
}

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
check "$tmp/prefix/bin/papaya" "$tmp/prefix/share/papaya"

(cd "$build" && cpack -G DEB -B "$tmp/deb" >/dev/null)
deb=$(ls "$tmp"/deb/papaya_*.deb)
depends=$(dpkg-deb -f "$deb" Depends)
[[ "$depends" == *libtorch* ]] || { echo "install_test: the package depends on '$depends', not LibTorch's package" >&2; exit 1; }
dpkg-deb -x "$deb" "$tmp/root"
check "$tmp/root/usr/bin/papaya" "$tmp/root/usr/share/papaya"
echo "install_test: installed and packaged papaya ran from $tmp/elsewhere (Depends: $depends)"
