#pragma once
// Bytes allocated on the training device, as the allocator sees them: on CPU
// a c10 memory reporter counts every allocation and free of this thread (and
// the autograd threads it starts); on CUDA the caching allocator's own
// statistics. Create the tracker before the network so that weights count.
#include <c10/core/Device.h>

#include <cstdint>
#include <exception>
#include <memory>

namespace papaya::executor {

// What a byte counts on CUDA (on CPU the two are the same): the caching
// allocator's blocks, each rounded up to 512 bytes (what the device holds),
// or the tensors' own bytes, which are a polynomial of a network's shape
// where the rounding of small tensors is not.
enum class Counted { allocator_blocks, tensor_bytes };

class MemoryTracker {
 public:
  explicit MemoryTracker(c10::Device device, Counted counted = Counted::allocator_blocks);
  ~MemoryTracker();
  MemoryTracker(const MemoryTracker&) = delete;
  MemoryTracker& operator=(const MemoryTracker&) = delete;

  int64_t current() const;        // bytes allocated now
  int64_t peak() const;           // most bytes allocated since the last reset
  int64_t reserved_peak() const;  // CUDA: most bytes the caching allocator held; CPU: peak()
  void reset_peak();              // peak := current

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Whether `error` is the allocator saying that memory ran out: std::bad_alloc,
// or c10's words for it ("CUDA out of memory", "DefaultCPUAllocator: can't
// allocate memory"), also where the autograd engine or the TorchScript
// interpreter passed it on wrapped in an error of their own.
bool is_allocator_out_of_memory(const std::exception& error);

}  // namespace papaya::executor
