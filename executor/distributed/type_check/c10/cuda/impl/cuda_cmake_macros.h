#pragma once
// Stands in, for the NCCL type check alone (executor/CMakeLists.txt), for the
// header LibTorch's CUDA build generates and Debian's CPU-only LibTorch lacks.
#define C10_CUDA_BUILD_SHARED_LIBS
