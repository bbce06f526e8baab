#pragma once
// Applying a plan to a network: a StoreSpec for every slot of every layer,
// a strategy for every segment. The plan comes from model::load_plan,
// checked against probe_layout(network).
#include <memory>
#include <vector>

#include "executor/networks/network.h"
#include "executor/storage/adaptive.h"
#include "model/plan.h"

namespace papaya::executor {

struct PlanOptions {
  int adaptive_every = 50;     // steps between sensitivity estimates of adaptive tensors
  uint64_t rounding_seed = 0;  // seeds stochastic rounding (seed_rounding)
};

// What a plan leaves running while training: the adaptive-bits controllers
// (one per average-bits budget in the plan).
class AppliedPlan {
 public:
  // Call before each step's forward (step counts from 0).
  void begin_step(int step);
  const std::vector<std::shared_ptr<AdaptiveBits>>& adaptive() const { return adaptive_; }

 private:
  friend AppliedPlan apply_plan(Network&, const model::Plan&, const model::NetworkLayout&, const PlanOptions&);
  std::vector<std::shared_ptr<AdaptiveBits>> adaptive_;
};

// Sets every layer's slots and every segment as `plan` says (keep where it
// says nothing). An inverted GELU/SiLU stores its output as the first layer
// that saves it does (raw if none does). Throws InputError if the plan swaps
// and the network is not on a CUDA device, naming the plan and the first
// swapped tensor.
AppliedPlan apply_plan(Network& network, const model::Plan& plan, const model::NetworkLayout& layout,
                       const PlanOptions& options = {});

}  // namespace papaya::executor
