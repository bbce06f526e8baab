#pragma once
// A proxy for the gradient variance that lossy storage adds, so that a plan
// can be held to a budget of it (GACT, ICML'22: stochastic rounding of a value
// to b bits within a group of range R adds at most (R/(2^b - 1))^2 / 4 of
// variance per element, and the gradient's variance grows with the sum over
// stored elements weighted by their sensitivity). Papaya has no measured
// sensitivities, so every element gets the same neutral range and weight:
//   quantize-b, adaptive-b (priced as quantize-b)   N / (2^b - 1)^2
//   invert (the derivative from an approximate inverse of GELU/SiLU,
//           counted as 8-bit rounding of its input)  N / 255^2
//   a recomputed segment's input kept at b bits     N / (2^b - 1)^2
//   keep, swap, 1-bit masks, recomputed tensors     0 (lossless)
// where N is the number of elements stored in that form: each stored copy
// once, however many slots read it. Only ratios are used: a budget is a
// fraction of the variance of quantize-2 on every activation (the plan
// "quantize-2"), which is about the same fraction at every batch size.
#include "model/layer_model.h"
#include "model/plan_space/plan_space.h"

namespace papaya::planner {

// The proxy of one stored form of `numel` elements (0 for lossless forms).
double stored_variance(const model::TensorStrategy& strategy, double numel);

// Variance proxies at the space's batch size; `space` must outlive it.
class VarianceProxy {
 public:
  VarianceProxy(const model::LayerModel& model, const model::PlanSpace& space);
  double of_option(int storage, const model::PlanSpace::Option& option) const;
  double of_segment_input(int segment, const model::TensorStrategy& input) const;
  double of(const model::Assignment& assignment) const;
  // quantize-2 on every activation: what a fraction of budget is a fraction of.
  double reference() const { return reference_; }

 private:
  const model::PlanSpace& space_;
  int layers_ = 0;
  std::vector<double> slot_numel_;     // per slot of the space
  std::vector<double> segment_numel_;  // per segment: its input
  double reference_ = 0;
};

}  // namespace papaya::planner
