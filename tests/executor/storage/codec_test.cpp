// The CPU codec: its bytes value by value, sizes, error, unbiased rounding,
// masks, heads, memory formats.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "executor/storage/codec.h"
#include "executor/storage/cpu_isa.h"
#include "executor/storage/quant_math.h"
#include "executor/storage/rounding.h"
#include "executor/storage/stored.h"
#include "executor/storage/stored_bytes.h"
#include "model/strategy.h"

namespace papaya::executor {
namespace {

model::TensorStrategy quantized(int bits, int group, bool headwise = false) {
  model::TensorStrategy s;
  s.form = model::Form::quantized;
  s.bits = bits;
  s.group_size = group;
  s.headwise = headwise;
  return s;
}

TEST(Codec, SizesAreTheModelsDeviceBytes) {
  for (int64_t numel : {1, 255, 256, 1000, 4097, 70000}) {
    for (int bits : {8, 4, 2}) {
      for (int group : {32, 128, 256}) {
        const torch::Tensor x = torch::randn({numel});
        const QuantLayout layout{bits, group, numel, numel};
        EXPECT_EQ(quantize(x, layout).numel(), model::device_bytes(model::SlotKind::activation, numel, 4, quantized(bits, group)))
            << numel << " values, " << bits << " bits, groups of " << group;
      }
    }
    const torch::Tensor mask = torch::rand({numel}) < 0.5;
    EXPECT_EQ(pack_mask(mask).numel(), model::device_bytes(model::SlotKind::mask, numel, 1, quantized(1, 256)));
  }
  // Heads of 17 x 16 values (not a whole number of groups), headwise.
  const torch::Tensor heads = torch::randn({2, 3, 17, 16});
  const QuantLayout layout{4, 256, heads.numel(), 17 * 16};
  EXPECT_EQ(quantize(heads, layout).numel(),
            model::device_bytes(model::SlotKind::activation, heads.numel(), 4, quantized(4, 256, true), 17 * 16));
}

TEST(Codec, ErrorIsBelowOneStepOfEachGroup) {
  const torch::Tensor x = torch::randn({5000}) * 3;
  for (int bits : {8, 4, 2}) {
    const QuantLayout layout{bits, 256, x.numel(), x.numel()};
    const torch::Tensor back = dequantize(quantize(x, layout), layout, x.sizes(), x.scalar_type());
    ASSERT_EQ(back.sizes(), x.sizes());
    const torch::Tensor padded = torch::constant_pad_nd(x, {0, 20 * 256 - 5000}).view({20, 256});
    auto [mn, mx] = torch::aminmax(padded, 1);
    // Stored as bf16 (8 significant bits), the min rounded down and the step up.
    const double bf16_step = 1.0 / 128;
    const torch::Tensor range = mx - mn + mn.abs() * bf16_step;
    const torch::Tensor step = (range / ((1 << bits) - 1) * (1 + bf16_step)).repeat_interleave(256).narrow(0, 0, 5000);
    EXPECT_TRUE(((back - x).abs() <= step * (1 + 1e-5)).all().item<bool>()) << bits << " bits";
  }
}

// A saved activation in another memory format than its shape's own
// (channels last, transposed) is quantized in the order of its memory and
// comes back with its own strides, its values within a step of its range:
// the backward that reads it runs as on the tensor it saved (a convolution
// given another memory format takes another algorithm, scratch and time).
TEST(Codec, AStoredTensorComesBackInItsOwnMemoryFormat) {
  StoreSpec spec;
  spec.strategy = quantized(8, 256);
  const std::vector<torch::Tensor> tensors{torch::randn({2, 5, 3, 4}).contiguous(torch::MemoryFormat::ChannelsLast),
                                           torch::randn({6, 7}).t(), torch::randn({3, 4, 5})};
  for (const torch::Tensor& x : tensors) {
    const torch::Tensor back = store(x, model::SlotKind::activation, spec)->restore();
    EXPECT_EQ(back.sizes(), x.sizes());
    EXPECT_EQ(back.strides(), x.strides());
    const double mx = x.max().item<double>(), mn = x.min().item<double>(), bf16_step = 1.0 / 128;
    const double step = (mx - mn + std::abs(mn) * bf16_step) / 255 * (1 + bf16_step);
    EXPECT_LE((back - x).abs().max().item<double>(), step * (1 + 1e-5)) << x.sizes();
  }
}

// Another shape of a tensor already stored (a linear layer's [B*H*W, C] view
// of a [B, H, W, C] activation that an inverted GELU stored) shares its copy:
// counted once, each restored in its own shape with the same values. A
// transposed view's elements are in another order: a copy of its own.
TEST(Codec, AnotherShapeOfAStoredTensorSharesItsCopy) {
  StoreSpec spec;
  spec.strategy = quantized(4, 128);
  const torch::Tensor x = torch::randn({2, 4, 4, 48});
  StoredBytesRecorder recorder;
  const StoredBytesGuard guard(&recorder);
  const auto whole = store(x, model::SlotKind::activation, spec);
  const auto rows = store(x.view({32, 48}), model::SlotKind::activation, spec);
  EXPECT_EQ(recorder.bytes().at("quantize-4"), whole->device_bytes());
  const torch::Tensor back = rows->restore();
  EXPECT_EQ(back.sizes(), (std::vector<int64_t>{32, 48}));
  EXPECT_TRUE(torch::equal(back, whole->restore().view({32, 48})));
  const auto transposed = store(x.view({32, 48}).t(), model::SlotKind::activation, spec);
  EXPECT_EQ(recorder.bytes().at("quantize-4"), whole->device_bytes() + transposed->device_bytes());
}

TEST(Codec, KeepsTheDtype) {
  const torch::Tensor x = torch::randn({3, 100}).to(torch::kBFloat16);
  const QuantLayout layout{8, 256, x.numel(), x.numel()};
  const torch::Tensor back = dequantize(quantize(x, layout), layout, x.sizes(), x.scalar_type());
  EXPECT_EQ(back.scalar_type(), torch::kBFloat16);
  EXPECT_LT((back.to(torch::kFloat) - x.to(torch::kFloat)).abs().max().item<double>(), 0.05);
}

// The mean of the dequantized values over many seeds converges to the input
// as 1/sqrt(seeds): rounding is unbiased.
TEST(Codec, StochasticRoundingIsUnbiased) {
  torch::manual_seed(3);
  const torch::Tensor x = torch::randn({4096});
  const QuantLayout layout{2, 256, x.numel(), x.numel()};
  torch::Tensor sum = torch::zeros_like(x);
  double rms_at_25 = 0;
  for (int seed = 1; seed <= 400; ++seed) {
    seed_rounding(seed);
    sum += dequantize(quantize(x, layout), layout, x.sizes(), x.scalar_type());
    if (seed == 25) rms_at_25 = (sum / 25 - x).pow(2).mean().sqrt().item<double>();
  }
  const double rms_at_400 = (sum / 400 - x).pow(2).mean().sqrt().item<double>();
  // A 2-bit step here is about 2; one draw's error has an rms below step/2.
  EXPECT_LT(rms_at_400, 1.0 / std::sqrt(400.0));
  EXPECT_LT(rms_at_400, 0.35 * rms_at_25);  // 1/sqrt(16) = 0.25 expected
  EXPECT_LT(std::abs((sum / 400 - x).mean().item<double>()), 3e-3);
}

// Bit j of byte b is value 8b + j, the last byte's spare bits zero.
TEST(Codec, MasksRoundTripExactly) {
  for (int64_t n : {1, 7, 8, 9, 1001}) {
    const torch::Tensor mask = (torch::rand({n}) < 0.3).view({n, 1});
    const torch::Tensor packed = pack_mask(mask);
    ASSERT_EQ(packed.numel(), (n + 7) / 8);
    const bool* m = mask.data_ptr<bool>();
    for (int64_t i = 0; i < 8 * packed.numel(); ++i) {
      const bool bit = (packed[i / 8].item<uint8_t>() >> (i % 8)) & 1;
      ASSERT_EQ(bit, i < n && m[i]) << n << " values, bit " << i;
    }
    EXPECT_TRUE(torch::equal(unpack_mask(packed, mask.sizes()), mask)) << n;
  }
}

// The buffer as the layout defines it, built value by value: groups of 32
// (or 20, not a whole number of any level's lanes) within heads of 100
// values (the last group of each head padded with zeros), the range from
// quant_math, codes packed first in the lowest bits, the noise from the one
// seed the call takes.
void expect_bytes_follow_the_layout(torch::ScalarType dtype, int bits, int group, bool headwise) {
  const torch::Tensor x = (torch::randn({3, 5, 20}) * 3).to(dtype);
  const QuantLayout l{bits, group, x.numel(), headwise ? 100 : x.numel()};
  seed_rounding(9);
  const uint64_t seed = next_rounding_seed();
  seed_rounding(9);
  const torch::Tensor buffer = quantize(x, l);
  ASSERT_EQ(buffer.numel(), l.bytes());

  const torch::Tensor values = x.to(torch::kFloat).contiguous();
  const float* v = values.data_ptr<float>();
  std::vector<uint8_t> expected(static_cast<size_t>(l.bytes()), 0);
  const int per_byte = 8 / bits;
  const float levels = static_cast<float>((1 << bits) - 1);
  for (int64_t g = 0; g < l.groups(); ++g) {
    const int64_t head = g / l.groups_per_head(), start = (g % l.groups_per_head()) * l.group_size;
    const auto value = [&](int64_t i) { return start + i < l.head_numel ? v[head * l.head_numel + start + i] : 0.f; };
    float low = value(0), high = value(0);
    for (int64_t i = 1; i < l.group_size; ++i) {
      low = std::min(low, value(i));
      high = std::max(high, value(i));
    }
    const quant::Range r = quant::range_of(low, high, bits);
    uint8_t* ranges = expected.data() + l.groups() * l.code_bytes_per_group();
    std::memcpy(ranges + 2 * g, &r.min_bits, 2);
    std::memcpy(ranges + 2 * (l.groups() + g), &r.scale_bits, 2);
    for (int64_t i = 0; i < l.group_size; ++i) {
      const unsigned code =
          quant::code_of(value(i), quant::from_bf16(r.min_bits), quant::from_bf16(r.scale_bits),
                         quant::uniform(quant::noise_key(seed), static_cast<uint32_t>(g * l.group_size + i)), levels);
      expected[static_cast<size_t>(g * l.code_bytes_per_group() + i / per_byte)] |=
          static_cast<uint8_t>(code << (bits * (i % per_byte)));
    }
  }
  const uint8_t* got = buffer.data_ptr<uint8_t>();
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), got))
      << bits << " bits, groups of " << group << ", headwise " << headwise << ", " << cpu_isa::to_string(cpu_isa::level());
  const torch::Tensor back = dequantize(buffer, l, x.sizes(), dtype);
  EXPECT_EQ(back.scalar_type(), dtype);
}

// At every instruction-set level this CPU has (cpu_isa.h), on 2 threads, so
// that the groups are split between tasks.
TEST(Codec, BytesFollowTheLayoutValueByValue) {
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  const cpu_isa::Level cpu = cpu_isa::level();
  torch::manual_seed(1);
  for (int level = 0; level <= static_cast<int>(cpu); ++level) {
    cpu_isa::limit(static_cast<cpu_isa::Level>(level));
    for (auto dtype : {torch::kFloat, torch::kBFloat16}) {
      for (int bits : {8, 4, 2}) {
        for (int group : {32, 20}) {
          for (bool headwise : {false, true}) expect_bytes_follow_the_layout(dtype, bits, group, headwise);
        }
      }
    }
  }
  cpu_isa::limit(cpu);
  at::set_num_threads(threads);
}

// Heads of very different scales: headwise, each head's groups take their
// own range, so the small head keeps its precision. Fixed values: with bf16
// ranges, a mixed group's min and scale can put a code exactly on 0 (about
// one draw in 40), and the small head would then decode well by luck.
TEST(Codec, HeadwiseGroupsStayInTheirHead) {
  torch::manual_seed(0);
  const torch::Tensor x = torch::randn({1, 2, 17, 16}) * torch::tensor({1000.0f, 0.001f}).view({1, 2, 1, 1});
  const QuantLayout headwise{8, 256, x.numel(), 17 * 16}, flat{8, 256, x.numel(), x.numel()};
  const auto error_of_small_head = [&](const QuantLayout& layout) {
    const torch::Tensor back = dequantize(quantize(x, layout), layout, x.sizes(), x.scalar_type());
    return (back - x).select(1, 1).abs().max().item<double>();
  };
  EXPECT_LT(error_of_small_head(headwise), 0.1 * 0.001);  // a step of the head's own range (~0.006 / 255)
  EXPECT_GT(error_of_small_head(flat), 0.01);             // the large head's range swamps it
}

}  // namespace
}  // namespace papaya::executor
