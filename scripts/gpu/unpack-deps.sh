# Sourced on the GPU machine: unpacks the carried .deb files into a prefix
# (never into /), points their CMake files at it, and exports the paths
# that cmake and the loader need.
PAPAYA_DEPS=${PAPAYA_DEPS:-/opt/papaya-deps}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$PAPAYA_DEPS"
for f in "$here"/*.deb; do dpkg -x "$f" "$PAPAYA_DEPS"; done
lib="$PAPAYA_DEPS/usr/lib/x86_64-linux-gnu"
# Debian's atlas packages install the BLAS/LAPACK .so under alternatives folders.
for a in atlas/libblas.so.3 atlas/liblapack.so.3; do
  [ -e "$lib/$a" ] && ln -sf "$lib/$a" "$lib/$(basename "$a" .3)"
done
ln -sf "$lib/libf77blas.so.3" "$lib/libf77blas.so" 2>/dev/null || true
ln -sf "$lib/libatlas.so.3" "$lib/libatlas.so" 2>/dev/null || true
# Absolute /usr paths in the packages' CMake files, /usr/share too: glog's
# config adds /usr/share/glog/cmake (its FindUnwind) to the module path.
grep -rl "/usr/" "$lib/cmake" "$PAPAYA_DEPS/usr/share/cmake" "$PAPAYA_DEPS/usr/lib/cmake" 2>/dev/null |
  xargs -r sed -i "s#\([\" ;]\)/usr/\(lib\|include\|share\)#\1$PAPAYA_DEPS/usr/\2#g"
export CMAKE_PREFIX_PATH="$PAPAYA_DEPS/usr${CMAKE_PREFIX_PATH:+;$CMAKE_PREFIX_PATH}"
export LD_LIBRARY_PATH="$lib:$lib/atlas${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CPATH="$PAPAYA_DEPS/usr/include:$PAPAYA_DEPS/usr/include/eigen3${CPATH:+:$CPATH}"
echo "deps unpacked in $PAPAYA_DEPS"
