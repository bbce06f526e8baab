#pragma once
// Functions written once for the CPU and the CUDA kernels, which compile
// them as device code too (quant_math.h, invert_math.h). No LibTorch.
#ifdef __CUDACC__
#define PAPAYA_HOST_DEVICE __host__ __device__ inline
#else
#define PAPAYA_HOST_DEVICE inline
#endif
