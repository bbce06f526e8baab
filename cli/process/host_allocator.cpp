#include "cli/process/host_allocator.h"

#include <cstdint>
#include <cstdlib>

#ifndef PAPAYA_SANITIZE
#include <jemalloc/jemalloc.h>
#endif

// jemalloc's settings, which it reads as it starts: pages freed are kept for
// reuse, never given back. Given back after some seconds (its default), a
// training step on the CPU page-faults anew on its large tensors: profiling
// Qwen1.5-MoE's fractions took 6.6 million page faults and 12.7 s of system
// time against 1.0 million and 1.8 s so (bench/RESULTS.md, "jemalloc").
// And its memory in transparent huge pages where the kernel has them (a
// kernel set to "madvise" gives them only to who asks): a page fault for
// 2 MiB, not 4 KiB. Each fault is dear on a virtual machine: a layout
// search of DeepSeek-V3 took 1.75 million of them and 60 s, 0.6 million and
// 40 s so (bench/RESULTS.md, "Huge pages").
#ifndef PAPAYA_SANITIZE
extern "C" const char* malloc_conf = "dirty_decay_ms:-1,muzzy_decay_ms:-1,thp:always";
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
