// Compiled once to build the precompiled LibTorch header (see CMakeLists.txt).
#include <torch/torch.h>
