// Swapping saved bytes to pinned host memory (CUDA builds only). All copies
// run on one side stream per device, so a host buffer handed back to the
// pool once its copy to the device is queued cannot be overwritten before
// that copy has run.
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <vector>

#include "executor/storage/swap.h"

namespace papaya::executor {
namespace {

constexpr int prefetch_window = 2;  // tensors fetched ahead of backward's use

// A CUDA event without timing, created when first recorded.
class Event {
 public:
  Event() = default;
  ~Event() {
    if (event_) cudaEventDestroy(event_);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(cudaStream_t stream) {
    if (!event_) C10_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
    C10_CUDA_CHECK(cudaEventRecord(event_, stream));
  }
  // `stream` waits for the work recorded (host threads do not).
  void block(cudaStream_t stream) const {
    if (event_) C10_CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0));
  }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace

class HostCopy {
 public:
  at::Tensor host;     // pinned bytes while swapped out
  at::Tensor fetched;  // back on the device, once fetched
  Event fetched_event;
  std::vector<int64_t> shape;
  at::ScalarType dtype = at::kFloat;
  c10::Device device = c10::Device(c10::kCUDA, 0);
  int64_t order = 0;  // position in swap-out order
};

namespace {

struct Swapper {
  std::mutex mutex;
  std::map<int64_t, std::vector<at::Tensor>> free_buffers;  // pinned buffers by size, reused across steps
  std::vector<std::weak_ptr<HostCopy>> swapped;             // in swap-out order
  std::map<c10::DeviceIndex, c10::cuda::CUDAStream> side;
  int64_t next_order = 0;

  c10::cuda::CUDAStream side_stream(c10::DeviceIndex index) {
    auto it = side.find(index);
    if (it == side.end()) it = side.emplace(index, c10::cuda::getStreamFromPool(false, index)).first;
    return it->second;
  }

  at::Tensor take_buffer(int64_t bytes) {
    auto& list = free_buffers[bytes];
    if (list.empty()) return at::empty({bytes}, at::TensorOptions().dtype(at::kByte).pinned_memory(true));
    at::Tensor buffer = list.back();
    list.pop_back();
    return buffer;
  }

  // Queues the copy back to the device on the side stream.
  void fetch(HostCopy& copy) {
    const c10::cuda::CUDAStream stream = side_stream(copy.device.index());
    {
      const c10::cuda::CUDAStreamGuard guard(stream);
      at::Tensor bytes = at::empty({copy.host.numel()}, at::TensorOptions().dtype(at::kByte).device(copy.device));
      bytes.copy_(copy.host, /*non_blocking=*/true);
      copy.fetched = bytes.view(copy.dtype).view(copy.shape);
    }
    copy.fetched_event.record(stream.stream());
    free_buffers[copy.host.numel()].push_back(copy.host);
    copy.host = at::Tensor();
  }
};

// Never destroyed: pinned buffers must not be freed after CUDA shuts down.
Swapper& swapper() {
  static Swapper* s = new Swapper();
  return *s;
}

}  // namespace

std::shared_ptr<HostCopy> swap_out(const at::Tensor& payload) {
  Swapper& s = swapper();
  const std::lock_guard<std::mutex> lock(s.mutex);
  auto copy = std::make_shared<HostCopy>();
  copy->shape = payload.sizes().vec();
  copy->dtype = payload.scalar_type();
  copy->device = payload.device();
  const at::Tensor contiguous = payload.contiguous();
  const at::Tensor bytes = contiguous.view(-1).view(at::kByte);
  copy->host = s.take_buffer(bytes.numel());

  const c10::cuda::CUDAStream compute = c10::cuda::getCurrentCUDAStream(copy->device.index());
  const c10::cuda::CUDAStream stream = s.side_stream(copy->device.index());
  Event computed;  // the side stream starts once the payload is written
  computed.record(compute.stream());
  computed.block(stream.stream());
  {
    const c10::cuda::CUDAStreamGuard guard(stream);
    copy->host.copy_(bytes, /*non_blocking=*/true);
  }
  // The payload's device memory goes back to the allocator when the caller
  // drops it, and is reused only after the copy has run.
  contiguous.record_stream(stream);

  copy->order = s.next_order++;
  s.swapped.erase(std::remove_if(s.swapped.begin(), s.swapped.end(), [](const auto& w) { return w.expired(); }), s.swapped.end());
  s.swapped.push_back(copy);
  return copy;
}

at::Tensor swap_in(const std::shared_ptr<HostCopy>& copy) {
  Swapper& s = swapper();
  at::Tensor out;
  {
    const std::lock_guard<std::mutex> lock(s.mutex);
    if (!copy->fetched.defined()) s.fetch(*copy);
    // Backward needs next the tensors swapped out just before this one.
    int ahead = 0;
    for (auto it = s.swapped.rbegin(); it != s.swapped.rend() && ahead < prefetch_window; ++it) {
      const std::shared_ptr<HostCopy> earlier = it->lock();
      if (!earlier || earlier->order >= copy->order) continue;
      if (earlier->host.defined() && !earlier->fetched.defined()) s.fetch(*earlier);
      ++ahead;
    }
    out = copy->fetched;
    copy->fetched = at::Tensor();
  }
  const c10::cuda::CUDAStream compute = c10::cuda::getCurrentCUDAStream(copy->device.index());
  copy->fetched_event.block(compute.stream());
  out.record_stream(compute);
  return out;
}

}  // namespace papaya::executor
