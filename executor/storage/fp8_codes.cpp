#include "executor/storage/fp8_codes.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace papaya::executor {
namespace {

using model::Fp8Format;

// Each code's value: sign, exponent field, mantissa field; exponent field 0
// holds the subnormals. The codes no saturating cast writes (E4M3's NaN,
// E5M2's infinities and NaNs) read as NaN.
torch::Tensor value_table(Fp8Format format) {
  const model::Fp8FormatSpec s = model::fp8_format_spec(format);
  const int m_bits = s.mantissa_bits, e_bits = 7 - s.mantissa_bits;
  std::vector<float> values(256);
  for (int code = 0; code < 256; ++code) {
    const int exponent = (code >> m_bits) & ((1 << e_bits) - 1), mantissa = code & ((1 << m_bits) - 1);
    double v = exponent == 0 ? std::ldexp(mantissa, 1 - s.exponent_bias - m_bits)
                             : std::ldexp((1 << m_bits) + mantissa, exponent - s.exponent_bias - m_bits);
    if (std::abs(v) > s.max) v = std::numeric_limits<double>::quiet_NaN();
    values[static_cast<size_t>(code)] = static_cast<float>(code & 0x80 ? -v : v);
  }
  return torch::tensor(values);
}

// The table in fp32 or bf16 (what the products read codes back in), made
// once: a product reads its operands back a tile at a time.
const torch::Tensor& cpu_table(Fp8Format format, torch::ScalarType dtype) {
  static const torch::Tensor e4m3 = value_table(Fp8Format::e4m3), e5m2 = value_table(Fp8Format::e5m2);
  static const torch::Tensor e4m3_bf16 = e4m3.to(torch::kBFloat16), e5m2_bf16 = e5m2.to(torch::kBFloat16);
  if (dtype == torch::kBFloat16) return format == Fp8Format::e4m3 ? e4m3_bf16 : e5m2_bf16;
  return format == Fp8Format::e4m3 ? e4m3 : e5m2;
}

// The codes of a tile of values, scaled.
torch::Tensor encode_tile(const torch::Tensor& x, const torch::Tensor& scale, Fp8Format format) {
  const model::Fp8FormatSpec s = model::fp8_format_spec(format);
  torch::Tensor a = (x.to(torch::kFloat) * scale).clamp_(-s.max, s.max);
  const torch::Tensor negative = a.lt(0);
  a.abs_();
  // A value's binade 2^e (subnormals: the smallest normal's) holds 2^M steps
  // of 2^(e-M); its code is (e + bias - 1)·2^M plus its steps rounded, which
  // carries into the next binade where rounding reaches it.
  const double smallest_normal = std::ldexp(1.0, 1 - s.exponent_bias);
  const torch::Tensor exponent = std::get<1>(torch::frexp(a.clamp_min(smallest_normal))).sub_(1).to(torch::kFloat);
  const torch::Tensor steps = a.div_(torch::exp2(exponent - s.mantissa_bits)).round_();
  const torch::Tensor code = exponent.add_(s.exponent_bias - 1).mul_(1 << s.mantissa_bits).add_(steps);
  return code.add_(negative.to(torch::kFloat).mul_(128)).to(torch::kByte);
}

}  // namespace

torch::Tensor fp8_encode(const torch::Tensor& x, const torch::Tensor& scale, Fp8Format format) {
  const torch::NoGradGuard no_grad;
  const torch::Tensor rows = x.dim() == 2 ? x : x.reshape({-1, x.size(-1)});
  torch::Tensor codes = torch::empty(rows.sizes(), rows.options().dtype(torch::kByte));
  const int64_t n = rows.size(0), step = std::max<int64_t>(1, fp8_tile_elements / std::max<int64_t>(1, rows.size(1)));
  const bool scale_by_row = scale.dim() == 2 && scale.size(0) == n && n > 1;
  for (int64_t first = 0; first < n; first += step) {
    const int64_t count = std::min(step, n - first);
    codes.narrow(0, first, count)
        .copy_(encode_tile(rows.narrow(0, first, count), scale_by_row ? scale.narrow(0, first, count) : scale, format));
  }
  return codes.view(x.sizes());
}

torch::Tensor fp8_amax(const torch::Tensor& t) {
  const torch::Tensor d = t.detach();
  return torch::maximum(d.min().neg(), d.max());
}

torch::Tensor fp8_amax(const torch::Tensor& t, int64_t dim) {
  const torch::Tensor d = t.detach();
  return torch::maximum(d.amin(dim, true).neg(), d.amax(dim, true));
}

torch::Tensor fp8_decode(const torch::Tensor& codes, Fp8Format format, torch::ScalarType dtype) {
  const torch::Tensor table = cpu_table(format, dtype).to(codes.device(), dtype);
  return table.index_select(0, codes.reshape(-1).to(torch::kInt)).view(codes.sizes());
}

torch::Tensor fp8_scale(const torch::Tensor& amax, Fp8Format format, bool power_of_two) {
  const torch::Tensor a = amax.to(torch::kFloat);
  torch::Tensor scale = torch::where(a.gt(0), model::fp8_format_spec(format).max / a, torch::ones_like(a));
  return power_of_two ? torch::exp2(torch::floor(torch::log2(scale))) : scale;
}

}  // namespace papaya::executor
