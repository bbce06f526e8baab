#pragma once
// Dynamic loss scaling, as torch.cuda.amp.GradScaler does it for fp16
// autocast: fp16 holds gradients no smaller than 2^-24, so the loss is
// multiplied by a large scale before backward and the gradients divided by
// it before the optimizer steps. A step whose gradients overflowed is
// skipped and the scale halved; after `growth_interval` good steps in a row
// it doubles. Under any other precision the scale is off: 1, nothing skipped.
#include <torch/torch.h>

#include "executor/networks/network.h"

namespace papaya::executor {

class LossScale {
 public:
  // On for amp-fp16, from GradScaler's defaults: 2^16, doubled after 2000 steps.
  explicit LossScale(const Precision& precision);
  LossScale(bool on, double initial, int growth_interval);

  bool on() const { return on_; }
  double value() const { return scale_; }
  int skipped_steps() const { return skipped_; }

  // (loss · scale).backward().
  void backward(const torch::Tensor& loss) const;
  // Divides the gradients by the scale and steps `optimizer` unless one of
  // them is not finite; updates the scale. Returns whether it stepped (a
  // skip with the scale fallen below 1 means no scale makes them finite).
  bool step(torch::optim::Optimizer& optimizer, const Network& network);

 private:
  bool on_;
  double scale_;
  int growth_interval_;
  int good_steps_ = 0;
  int skipped_ = 0;
};

}  // namespace papaya::executor
