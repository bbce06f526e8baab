#pragma once

#include <string>

namespace papaya::cli {

// The allocator that serves the process's malloc, as `papaya --version`
// names it: "jemalloc 5.3.0" where jemalloc does (the build links it, for
// the reasons CMakeLists.txt gives), else what does. Asked of the allocator
// itself: jemalloc counts a block malloc gives, or it is not jemalloc's.
std::string host_allocator();

}  // namespace papaya::cli
