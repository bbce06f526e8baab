#include "executor/loss_scale.h"

namespace papaya::executor {

LossScale::LossScale(const Precision& precision)
    : LossScale(precision.autocast && precision.dtype == torch::kHalf, 65536.0, 2000) {}

LossScale::LossScale(bool on, double initial, int growth_interval)
    : on_(on), scale_(on ? initial : 1.0), growth_interval_(growth_interval) {}

void LossScale::backward(const torch::Tensor& loss) const { (on_ ? loss * scale_ : loss).backward(); }

bool LossScale::step(torch::optim::Optimizer& optimizer, const Network& network) {
  if (!on_) {
    optimizer.step();
    return true;
  }
  bool finite = true;
  for (const auto& p : network.parameters()) {
    if (!p.grad().defined()) continue;
    p.mutable_grad().div_(scale_);
    finite = finite && p.grad().isfinite().all().item<bool>();
  }
  if (finite) {
    optimizer.step();
    if (++good_steps_ == growth_interval_) {
      scale_ *= 2;
      good_steps_ = 0;
    }
    return true;
  }
  ++skipped_;
  good_steps_ = 0;
  scale_ /= 2;
  return false;
}

}  // namespace papaya::executor
