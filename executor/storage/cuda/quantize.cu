#include <cuda_bf16.h>

#include "executor/storage/cuda/quantize.h"
#include "executor/storage/quant_math.h"

namespace {

namespace quant = papaya::executor::quant;

constexpr int threads = 256;

struct Layout {
  int64_t numel, head_numel, groups_per_head, groups;
  int group_size, bits, code_bytes;  // code bytes per group

  // Where the bf16 ranges start, after the codes: groups mins, then groups scales (bit patterns).
  __host__ __device__ int64_t ranges_offset() const { return groups * code_bytes; }
};

Layout make_layout(int64_t numel, int64_t head_numel, int group_size, int bits) {
  Layout l;
  l.numel = numel;
  l.head_numel = head_numel;
  l.groups_per_head = (head_numel + group_size - 1) / group_size;
  l.groups = (numel / head_numel) * l.groups_per_head;
  l.group_size = group_size;
  l.bits = bits;
  l.code_bytes = group_size * bits / 8;
  return l;
}

__device__ float load(const void* x, int dtype, int64_t i) {
  return dtype == papaya_bfloat16 ? __bfloat162float(static_cast<const __nv_bfloat16*>(x)[i]) : static_cast<const float*>(x)[i];
}

__device__ void store(void* x, int dtype, int64_t i, float v) {
  if (dtype == papaya_bfloat16) {
    static_cast<__nv_bfloat16*>(x)[i] = __float2bfloat16_rn(v);
  } else {
    static_cast<float*>(x)[i] = v;
  }
}

// One block per group: its min and max, then its codes, byte by byte.
__global__ void quantize_groups(const void* x, int dtype, Layout l, uint64_t seed, uint8_t* out) {
  const int64_t group = blockIdx.x;
  const int64_t head = group / l.groups_per_head, in_head = group % l.groups_per_head;
  const int64_t first = head * l.head_numel + in_head * l.group_size;
  const int64_t count = min(static_cast<int64_t>(l.group_size), l.head_numel - in_head * l.group_size);

  __shared__ float low[threads], high[threads];
  float lo = count < l.group_size ? 0.f : INFINITY, hi = count < l.group_size ? 0.f : -INFINITY;  // zero padding
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    const float v = load(x, dtype, first + i);
    lo = fminf(lo, v);
    hi = fmaxf(hi, v);
  }
  low[threadIdx.x] = lo;
  high[threadIdx.x] = hi;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      low[threadIdx.x] = fminf(low[threadIdx.x], low[threadIdx.x + half]);
      high[threadIdx.x] = fmaxf(high[threadIdx.x], high[threadIdx.x + half]);
    }
    __syncthreads();
  }
  const float levels = static_cast<float>((1 << l.bits) - 1);
  const quant::Range r = quant::range_of(low[0], high[0], l.bits);
  const float mn = quant::from_bf16(r.min_bits), scale = quant::from_bf16(r.scale_bits);
  if (threadIdx.x == 0) {
    uint16_t* ranges = reinterpret_cast<uint16_t*>(out + l.ranges_offset());
    ranges[group] = r.min_bits;
    ranges[l.groups + group] = r.scale_bits;
  }
  const int per_byte = 8 / l.bits;
  for (int b = threadIdx.x; b < l.code_bytes; b += blockDim.x) {
    unsigned code = 0;
    for (int j = 0; j < per_byte; ++j) {
      const int64_t i = static_cast<int64_t>(b) * per_byte + j;
      const float v = i < count ? load(x, dtype, first + i) : 0.f;
      code |= quant::code_of(v, mn, scale,
                             quant::uniform(quant::noise_key(seed), static_cast<uint32_t>(group * l.group_size + i)), levels)
              << (l.bits * j);
    }
    out[group * l.code_bytes + b] = static_cast<uint8_t>(code);
  }
}

__global__ void dequantize_values(const uint8_t* in, Layout l, void* out, int dtype) {
  const uint16_t* mins = reinterpret_cast<const uint16_t*>(in + l.ranges_offset());
  const uint16_t* scales = mins + l.groups;
  const int per_byte = 8 / l.bits;
  const unsigned mask = (1u << l.bits) - 1;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < l.numel;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t head = i / l.head_numel, r = i % l.head_numel;
    const int64_t group = head * l.groups_per_head + r / l.group_size;
    const int64_t j = r % l.group_size;
    const unsigned code = (in[group * l.code_bytes + j / per_byte] >> (l.bits * (j % per_byte))) & mask;
    const float v = quant::decode(code, quant::from_bf16(mins[group]), quant::from_bf16(scales[group]));
    store(out, dtype, i, v);
  }
}

}  // namespace

extern "C" cudaError_t papaya_quantize(const void* x, int dtype, int64_t numel, int64_t head_numel, int group_size, int bits,
                                       uint64_t seed, uint8_t* out, cudaStream_t stream) {
  const Layout l = make_layout(numel, head_numel, group_size, bits);
  if (l.groups == 0) return cudaSuccess;
  quantize_groups<<<static_cast<unsigned>(l.groups), threads, 0, stream>>>(x, dtype, l, seed, out);
  return cudaGetLastError();
}

extern "C" cudaError_t papaya_dequantize(const uint8_t* in, int64_t numel, int64_t head_numel, int group_size, int bits,
                                         void* out, int dtype, cudaStream_t stream) {
  const Layout l = make_layout(numel, head_numel, group_size, bits);
  if (numel == 0) return cudaSuccess;
  const int64_t blocks = (numel + threads - 1) / threads;
  dequantize_values<<<static_cast<unsigned>(blocks < 65535 * 16 ? blocks : 65535 * 16), threads, 0, stream>>>(in, l, out, dtype);
  return cudaGetLastError();
}
