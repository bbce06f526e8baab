#include "executor/memory.h"

#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/version.h>

#include <algorithm>
#include <atomic>
#include <new>
#include <string>

#include "executor/memory_cuda.h"

namespace papaya::executor {
namespace {

// reportMemoryUsage's totals are int64_t in LibTorch 1.x and size_t in 2.x.
#if TORCH_VERSION_MAJOR >= 2
using ReportedTotal = size_t;
#else
using ReportedTotal = int64_t;
#endif

class CpuReporter : public c10::MemoryReportingInfoBase {
 public:
  void reportMemoryUsage(void*, int64_t alloc_size, ReportedTotal, ReportedTotal, c10::Device device) override {
    if (device.type() != c10::DeviceType::CPU) return;
    const int64_t now = current.fetch_add(alloc_size) + alloc_size;
    int64_t seen = peak.load();
    while (now > seen && !peak.compare_exchange_weak(seen, now)) {
    }
  }
  bool memoryProfilingEnabled() const override { return true; }

  std::atomic<int64_t> current{0}, peak{0};
};

}  // namespace

struct MemoryTracker::Impl {
  c10::Device device;
  Counted counted;
  std::shared_ptr<CpuReporter> reporter;
  std::unique_ptr<c10::DebugInfoGuard> guard;

  AllocatedBytes on_cuda() const {
    return counted == Counted::tensor_bytes ? cuda_requested(device.index()) : cuda_allocated(device.index());
  }
};

MemoryTracker::MemoryTracker(c10::Device device, Counted counted) : impl_(new Impl{device, counted, nullptr, nullptr}) {
  if (device.is_cpu()) {
    impl_->reporter = std::make_shared<CpuReporter>();
    impl_->guard = std::make_unique<c10::DebugInfoGuard>(c10::DebugInfoKind::PROFILER_STATE, impl_->reporter);
  } else {
    cuda_reset_peak(device.index());
  }
}

MemoryTracker::~MemoryTracker() = default;

int64_t MemoryTracker::current() const { return impl_->reporter ? impl_->reporter->current.load() : impl_->on_cuda().current; }

int64_t MemoryTracker::peak() const { return impl_->reporter ? impl_->reporter->peak.load() : impl_->on_cuda().peak; }

int64_t MemoryTracker::reserved_peak() const { return impl_->reporter ? peak() : cuda_reserved_peak(impl_->device.index()); }

void MemoryTracker::reset_peak() {
  if (impl_->reporter) {
    impl_->reporter->peak.store(impl_->reporter->current.load());
  } else {
    cuda_reset_peak(impl_->device.index());
  }
}

bool is_allocator_out_of_memory(const std::exception& error) {
  if (dynamic_cast<const std::bad_alloc*>(&error)) return true;
  const std::string what = error.what();
  return what.find("out of memory") != std::string::npos || what.find("can't allocate memory") != std::string::npos;
}

}  // namespace papaya::executor
