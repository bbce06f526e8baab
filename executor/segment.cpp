#include "executor/segment.h"

#include "executor/moms/checkpoint.h"

namespace papaya::executor {

torch::Tensor Segment::run(torch::Tensor x) {
  if (strategy_.recompute && torch::GradMode::is_enabled()) return checkpoint(*this, x);
  return forward(std::move(x));
}

}  // namespace papaya::executor
