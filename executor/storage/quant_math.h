#pragma once
// The arithmetic of the quantized layout, one definition for the CPU codec
// and the CUDA kernels (which compile it as device code), so that both write
// the same bytes for the same seed: the bf16 rounding of a group's range,
// the rounding noise, a value's code and its decoded value. No LibTorch.
#include <cstdint>
#include <cstring>

#include "executor/storage/host_device.h"

namespace papaya::executor::quant {

// The bits of one type read as another of its size (memcpy, which device
// code has too).
template <typename To, typename From>
PAPAYA_HOST_DEVICE To bit_cast(From v) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast between types of one size");
  To out;
  memcpy(&out, &v, sizeof out);
  return out;
}

// `v` rounded to a bf16 toward +inf (`up`) or -inf, as its bit pattern: the
// low 16 bits dropped after raising the magnitude by one bf16 step where
// that direction is away from zero.
PAPAYA_HOST_DEVICE uint16_t round_to_bf16(float v, bool up) {
  const uint32_t bits = bit_cast<uint32_t>(v);
  return static_cast<uint16_t>(((up ? v > 0.f : v < 0.f) ? bits + 0xFFFFu : bits) >> 16);
}

PAPAYA_HOST_DEVICE float from_bf16(uint16_t bits) { return bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

// A group's range as stored: its min rounded down to bf16 and its scale,
// (max - min) / levels rounded up; 1 for a constant group, which decodes
// exactly from its min.
struct Range {
  uint16_t min_bits, scale_bits;
};

PAPAYA_HOST_DEVICE Range range_of(float low, float high, int bits) {
  const float levels = static_cast<float>((1 << bits) - 1);
  const uint16_t min_bits = round_to_bf16(low, false);
#ifdef __CUDA_ARCH__
  uint16_t scale_bits = round_to_bf16(__fdiv_rn(__fsub_rn(high, from_bf16(min_bits)), levels), true);
#else
  uint16_t scale_bits = round_to_bf16((high - from_bf16(min_bits)) / levels, true);
#endif
  if (scale_bits == 0) scale_bits = 0x3F80;  // 1.0f
  return {min_bits, scale_bits};
}

// The 32-bit key of a call's seed.
PAPAYA_HOST_DEVICE uint32_t noise_key(uint64_t seed) { return static_cast<uint32_t>(seed ^ (seed >> 32)); }

// Uniform in [0, 1), 24 bits, from a hash of (key, value index): a
// multiplicative step and Wellons' lowbias32 mixer. 32-bit arithmetic, the
// index too (a value's index modulo 2^32), so that the CPU loop vectorizes;
// the noise repeats after 2^32 values.
PAPAYA_HOST_DEVICE float uniform(uint32_t key, uint32_t index) {
  uint32_t z = index * 0x9E3779B9u + key;
  z ^= z >> 16;
  z *= 0x7FEB352Du;
  z ^= z >> 15;
  z *= 0x846CA68Bu;
  z ^= z >> 16;
  return static_cast<float>(z >> 8) * (1.0f / 16777216.0f);
}

// Stochastic rounding of `v` against the group's min and scale, with noise
// `u`: E[code] = (v - min) / scale, clamped to [0, levels] (NaN gives 0).
// Clamping before truncating is flooring then clamping, for levels whole.
PAPAYA_HOST_DEVICE unsigned code_of(float v, float mn, float scale, float u, float levels) {
#ifdef __CUDA_ARCH__
  float q = __fadd_rn(__fdiv_rn(__fsub_rn(v, mn), scale), u);
#else
  float q = (v - mn) / scale + u;
#endif
  q = q > 0.f ? q : 0.f;
  q = q < levels ? q : levels;
  return static_cast<unsigned>(static_cast<int>(q));
}

PAPAYA_HOST_DEVICE float decode(unsigned code, float mn, float scale) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(__fmul_rn(static_cast<float>(code), scale), mn);
#else
  return static_cast<float>(code) * scale + mn;
#endif
}

}  // namespace papaya::executor::quant
