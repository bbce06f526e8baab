#include "executor/moms/codec_speed.h"

#include <algorithm>
#include <chrono>
#include <functional>

#include "executor/device.h"
#include "executor/moms/codec.h"
#include "executor/moms/invert.h"

namespace papaya::executor {
namespace {

constexpr int64_t values = int64_t{1} << 20;
constexpr int64_t small_values = int64_t{1} << 12;  // below the CPU codec's chunk
constexpr int repeats = 3;

// The fastest of a few runs of `work`, after one to warm up.
template <typename Work>
double seconds_of(const torch::Device& device, Work work) {
  work();
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    synchronize(device);
    const auto start = std::chrono::steady_clock::now();
    work();
    synchronize(device);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

// Bytes `work` allocates at its peak beyond what it returns.
template <typename Work>
double scratch_of(MemoryTracker& memory, Work work) {
  const int64_t before = memory.current();
  memory.reset_peak();
  const torch::Tensor result = work();
  return std::max(0.0, static_cast<double>(memory.peak() - before) - static_cast<double>(result.storage().nbytes()));
}

// One codec: `pack` of a tensor (to its packed form) and `unpack` (back).
struct Codec {
  std::function<torch::Tensor(const torch::Tensor&)> pack;
  std::function<torch::Tensor(const torch::Tensor& packed, const torch::Tensor& like)> unpack;
};

model::CodecMeasurement measure(int bits, const Codec& codec, const torch::Tensor& x, const torch::Tensor& small,
                                MemoryTracker& memory) {
  const torch::Device device = x.device();
  model::CodecMeasurement m;
  m.bits = bits;
  const double bytes = static_cast<double>(x.numel() * x.element_size());
  torch::Tensor packed;
  m.pack_bytes_per_s = bytes / seconds_of(device, [&] { packed = codec.pack(x); });
  m.unpack_bytes_per_s = bytes / seconds_of(device, [&] { codec.unpack(packed, x); });
  // What a small tensor takes beyond its bytes' share.
  const double small_bytes = static_cast<double>(small.numel() * small.element_size());
  const torch::Tensor small_packed = codec.pack(small);
  m.pack_seconds_per_call = std::max(0.0, seconds_of(device, [&] { codec.pack(small); }) - small_bytes / m.pack_bytes_per_s);
  m.unpack_seconds_per_call =
      std::max(0.0, seconds_of(device, [&] { codec.unpack(small_packed, small); }) - small_bytes / m.unpack_bytes_per_s);
  m.pack_scratch_max = scratch_of(memory, [&] { return codec.pack(x); });
  m.pack_scratch_per_byte = scratch_of(memory, [&] { return codec.pack(small); }) / small_bytes;
  m.unpack_scratch_max = scratch_of(memory, [&] { return codec.unpack(packed, x); });
  m.unpack_scratch_per_byte = scratch_of(memory, [&] { return codec.unpack(small_packed, small); }) / small_bytes;
  return m;
}

}  // namespace

std::vector<model::CodecMeasurement> measure_codecs(const torch::Device& device, torch::ScalarType dtype, MemoryTracker& memory) {
  const torch::NoGradGuard no_grad;
  std::vector<model::CodecMeasurement> out;
  const torch::TensorOptions options = torch::TensorOptions(device).dtype(dtype);
  const torch::Tensor x = torch::randn({values}, options), small = torch::randn({small_values}, options);
  const auto layout = [](int bits, const torch::Tensor& t) {
    return QuantLayout{bits, model::default_group_size(bits), t.numel(), t.numel()};
  };
  for (int bits : {8, 4, 2}) {
    const Codec codec{[&](const torch::Tensor& t) { return quantize(t, layout(bits, t)); },
                      [&](const torch::Tensor& p, const torch::Tensor& like) {
                        return dequantize(p, layout(bits, like), like.sizes(), like.scalar_type());
                      }};
    out.push_back(measure(bits, codec, x, small, memory));
  }
  // A mask as a ReLU output is stored: from the activation, to bools.
  const Codec mask{[](const torch::Tensor& t) { return pack_mask(t != 0); },
                   [](const torch::Tensor& p, const torch::Tensor& like) { return unpack_mask(p, like.sizes()); }};
  out.push_back(measure(1, mask, torch::relu(x), torch::relu(small), memory));
  return out;
}

std::vector<model::InvertMeasurement> measure_inverts(const torch::Device& device, torch::ScalarType dtype) {
  const torch::NoGradGuard no_grad;
  const torch::TensorOptions options = torch::TensorOptions(device).dtype(dtype);
  const torch::Tensor x = torch::randn({values}, options), grad = torch::randn({values}, options);
  const double bytes = static_cast<double>(x.numel() * x.element_size());
  std::vector<model::InvertMeasurement> out;
  for (const std::string kind : {"gelu", "silu"}) {
    const bool gelu = kind == "gelu";
    const torch::Tensor y = gelu ? at::gelu(x) : at::silu(x), right = x >= branch_point(kind);
    model::InvertMeasurement m;
    m.kind = kind;
    m.from_output_bytes_per_s = bytes / seconds_of(device, [&] { input_grad_from_output(kind, grad, y, right); });
    m.native_bytes_per_s = bytes / seconds_of(device, [&] { gelu ? at::gelu_backward(grad, x) : at::silu_backward(grad, x); });
    out.push_back(m);
  }
  return out;
}

}  // namespace papaya::executor
