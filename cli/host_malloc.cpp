#include "cli/host_malloc.h"

#include <climits>
#include <cstdlib>  // defines __GLIBC__ where the C library is glibc

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace papaya::cli {

void keep_freed_host_memory() {
#ifdef __GLIBC__
  mallopt(M_MMAP_MAX, 0);              // large blocks from the heap too (glibc still maps where the heap cannot grow)
  mallopt(M_TRIM_THRESHOLD, INT_MAX);  // the heap's free top is not given back
#endif
}

}  // namespace papaya::cli
