#include "profiler/codec_speed.h"

#include <algorithm>
#include <chrono>
#include <functional>

#include "executor/device.h"
#include "executor/storage/codec.h"
#include "executor/storage/invert.h"

namespace papaya::profiler {
namespace {

constexpr int64_t values = int64_t{1} << 20;
constexpr int64_t small_values = int64_t{1} << 12;  // below the CPU codec's chunk
constexpr int repeats = 3;
// The benchmarks run in turn this many times and each keeps its fastest
// pass: a slow moment of a shared machine lasts longer than the repeats of
// one benchmark (it once halved the 4-bit codec's speeds and no other's, and
// the model then priced quantize-4 27% slower than it ran).
constexpr int passes = 3;

// The fastest of a few runs of `work`, after one to warm up.
template <typename Work>
double seconds_of(const torch::Device& device, Work work) {
  work();
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    executor::synchronize(device);
    const auto start = std::chrono::steady_clock::now();
    work();
    executor::synchronize(device);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

// Bytes `work` allocates at its peak beyond what it returns.
template <typename Work>
double scratch_of(executor::MemoryTracker& memory, Work work) {
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
                                executor::MemoryTracker& memory) {
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

// The faster figures of two measurements of one codec; scratch, which does
// not vary, the larger.
model::CodecMeasurement fastest(const model::CodecMeasurement& a, const model::CodecMeasurement& b) {
  model::CodecMeasurement m = a;
  m.pack_bytes_per_s = std::max(a.pack_bytes_per_s, b.pack_bytes_per_s);
  m.unpack_bytes_per_s = std::max(a.unpack_bytes_per_s, b.unpack_bytes_per_s);
  m.pack_seconds_per_call = std::min(a.pack_seconds_per_call, b.pack_seconds_per_call);
  m.unpack_seconds_per_call = std::min(a.unpack_seconds_per_call, b.unpack_seconds_per_call);
  m.pack_scratch_per_byte = std::max(a.pack_scratch_per_byte, b.pack_scratch_per_byte);
  m.pack_scratch_max = std::max(a.pack_scratch_max, b.pack_scratch_max);
  m.unpack_scratch_per_byte = std::max(a.unpack_scratch_per_byte, b.unpack_scratch_per_byte);
  m.unpack_scratch_max = std::max(a.unpack_scratch_max, b.unpack_scratch_max);
  return m;
}

model::InvertMeasurement fastest(const model::InvertMeasurement& a, const model::InvertMeasurement& b) {
  model::InvertMeasurement m = a;
  m.from_output_bytes_per_s = std::max(a.from_output_bytes_per_s, b.from_output_bytes_per_s);
  m.native_bytes_per_s = std::max(a.native_bytes_per_s, b.native_bytes_per_s);
  return m;
}

// Runs each benchmark once per pass, all of them in turn, and keeps each
// one's fastest figures.
template <typename Measurement>
std::vector<Measurement> fastest_of_passes(const std::vector<std::function<Measurement()>>& benchmarks) {
  std::vector<Measurement> out;
  for (int pass = 0; pass < passes; ++pass) {
    for (size_t i = 0; i < benchmarks.size(); ++i) {
      const Measurement m = benchmarks[i]();
      if (pass == 0) {
        out.push_back(m);
      } else {
        out[i] = fastest(out[i], m);
      }
    }
  }
  return out;
}

}  // namespace

std::vector<model::CodecMeasurement> measure_codecs(const torch::Device& device, torch::ScalarType dtype,
                                                    executor::MemoryTracker& memory) {
  const torch::NoGradGuard no_grad;
  std::vector<std::function<model::CodecMeasurement()>> benchmarks;
  const torch::TensorOptions options = torch::TensorOptions(device).dtype(dtype);
  const torch::Tensor x = torch::randn({values}, options), small = torch::randn({small_values}, options);
  const auto layout = [](int bits, const torch::Tensor& t) {
    return executor::QuantLayout{bits, model::default_group_size(bits), t.numel(), t.numel()};
  };
  for (int bits : {8, 4, 2}) {
    const Codec codec{[=](const torch::Tensor& t) { return executor::quantize(t, layout(bits, t)); },
                      [=](const torch::Tensor& p, const torch::Tensor& like) {
                        return executor::dequantize(p, layout(bits, like), like.sizes(), like.scalar_type());
                      }};
    benchmarks.push_back([=, &memory] { return measure(bits, codec, x, small, memory); });
  }
  // A mask as a ReLU output is stored: from the activation's nonzero values, to bools.
  const Codec mask{[](const torch::Tensor& t) { return executor::pack_mask(t); },
                   [](const torch::Tensor& p, const torch::Tensor& like) { return executor::unpack_mask(p, like.sizes()); }};
  const torch::Tensor relu_x = torch::relu(x), relu_small = torch::relu(small);
  benchmarks.push_back([=, &memory] { return measure(1, mask, relu_x, relu_small, memory); });
  return fastest_of_passes(benchmarks);
}

std::vector<model::InvertMeasurement> measure_inverts(const torch::Device& device, torch::ScalarType dtype) {
  const torch::NoGradGuard no_grad;
  const torch::TensorOptions options = torch::TensorOptions(device).dtype(dtype);
  const torch::Tensor x = torch::randn({values}, options), grad = torch::randn({values}, options);
  const double bytes = static_cast<double>(x.numel() * x.element_size());
  std::vector<std::function<model::InvertMeasurement()>> benchmarks;
  for (const model::LayerKind kind : {model::LayerKind::gelu, model::LayerKind::silu}) {
    const bool gelu = kind == model::LayerKind::gelu;
    const torch::Tensor y = gelu ? at::gelu(x) : at::silu(x), right = x >= executor::branch_point(kind);
    benchmarks.push_back([=] {
      model::InvertMeasurement m;
      m.kind = kind;
      m.from_output_bytes_per_s = bytes / seconds_of(device, [&] { executor::input_grad_from_output(kind, grad, y, right); });
      m.native_bytes_per_s = bytes / seconds_of(device, [&] { gelu ? at::gelu_backward(grad, x) : at::silu_backward(grad, x); });
      return m;
    });
  }
  return fastest_of_passes(benchmarks);
}

}  // namespace papaya::profiler
