#include "executor/moms/codec_speed.h"

#include <algorithm>
#include <chrono>

#include "executor/device.h"
#include "executor/moms/codec.h"

namespace papaya::executor {
namespace {

constexpr int64_t values = int64_t{1} << 20;
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

}  // namespace

std::vector<model::CodecMeasurement> measure_codecs(const torch::Device& device, torch::ScalarType dtype) {
  const torch::NoGradGuard no_grad;
  std::vector<model::CodecMeasurement> out;
  const torch::Tensor x = torch::randn({values}, torch::TensorOptions(device).dtype(dtype));
  const double bytes = static_cast<double>(values) * static_cast<double>(x.element_size());
  for (int bits : {8, 4, 2}) {
    const QuantLayout layout{bits, 256, values, values};
    torch::Tensor packed;
    const double pack = seconds_of(device, [&] { packed = quantize(x, layout); });
    const double unpack = seconds_of(device, [&] { dequantize(packed, layout, x.sizes(), dtype); });
    out.push_back({bits, bytes / pack, bytes / unpack});
  }
  const torch::Tensor mask = x > 0;
  torch::Tensor bits;
  const double pack = seconds_of(device, [&] { bits = pack_mask(mask); });
  const double unpack = seconds_of(device, [&] { unpack_mask(bits, mask.sizes()); });
  out.push_back({1, static_cast<double>(values) / pack, static_cast<double>(values) / unpack});
  return out;
}

}  // namespace papaya::executor
