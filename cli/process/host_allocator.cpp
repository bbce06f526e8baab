#include "cli/process/host_allocator.h"

#include <cstdint>
#include <cstdlib>

#ifndef PAPAYA_SANITIZE
#include <jemalloc/jemalloc.h>
#endif

namespace papaya::cli {

#ifdef PAPAYA_SANITIZE
std::string host_allocator() { return "AddressSanitizer's allocator"; }
#else
namespace {

uint64_t bytes_this_thread_allocated() {
  uint64_t bytes = 0;
  size_t size = sizeof(bytes);
  return mallctl("thread.allocated", &bytes, &size, nullptr, 0) == 0 ? bytes : 0;
}

}  // namespace

std::string host_allocator() {
  constexpr size_t probe_bytes = size_t{1} << 20;
  const uint64_t before = bytes_this_thread_allocated();
  void* volatile probe = std::malloc(probe_bytes);  // volatile: the call is made
  const uint64_t after = bytes_this_thread_allocated();
  std::free(probe);
  if (after < before + probe_bytes) return "glibc malloc";  // jemalloc linked, but not the one malloc calls
  const char* version = nullptr;
  size_t size = sizeof(version);
  if (mallctl("version", &version, &size, nullptr, 0) != 0 || version == nullptr) return "jemalloc";
  const std::string full = version;  // "5.3.0-0-g54eaed1d8b...": the release, then git's description
  return "jemalloc " + full.substr(0, full.find('-'));
}
#endif

}  // namespace papaya::cli
