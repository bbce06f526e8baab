#pragma once
// Shared by the tests of the memory optimizations: tiny networks of the zoo
// under a plan, and one training step's loss and gradients.
#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>

#include "executor/networks/network.h"
#include "executor/plan_apply.h"

namespace papaya::executor::testing {

// A zoo config, with `dropout` set where the family has one (gpt, bert, vit, mlp).
model::NetworkConfig tiny_config(const std::string& name, double dropout = 0);

// `config` (a transformer) with its attention materialized as scores,
// softmax and context (the zoo's is fused), its other settings as they are.
model::NetworkConfig materialized(model::NetworkConfig config);

// Multiples of 1/256 in [0, 255/256], every 8th value 0 and the next 255/256:
// each quantization group's min is 0 and its scale 1/256, so 8-bit codes
// (stochastically rounded or not) are the values exactly.
torch::Tensor on_8bit_grid(torch::IntArrayRef shape);
// A slot stored in 8 bits.
StoreSpec eight_bits();

struct Planned {
  std::shared_ptr<Network> network;
  model::NetworkLayout layout;
  AppliedPlan applied;
};
// The network (zoo or archive: executor::source_for) with weights from seed 0
// and `plan` (a name or a file) applied.
Planned planned(const model::NetworkConfig& config, const std::string& plan);
Planned planned(const model::NetworkConfig& config, const model::Plan& plan);

// Every segment recomputed from its raw input ("keep") or from it stored as
// `input` says ("quantize-8"), nothing else changed.
model::Plan recompute_segments(const model::NetworkLayout& layout, const std::string& input = "keep");

struct Step {
  double loss = 0;
  std::map<std::string, torch::Tensor> grads;
};
// One forward and backward on `batch`, with the default generators seeded
// with `seed` first (the dropout masks).
Step step(Network& network, const Batch& batch, uint64_t seed = 7);

// Each layer's inputs in one training forward of `network` on `batch`, by
// path, detached, with the gradient requirement they had there: to run a
// layer alone (Layer::run) as it ran in the network.
std::map<std::string, std::vector<torch::Tensor>> layer_inputs(Network& network, const Batch& batch);

// ||g - exact|| / ||exact|| over all parameters' gradients together.
double relative_error(const Step& approx, const Step& exact);
// Every gradient equal, bit for bit.
bool identical(const Step& a, const Step& b);

}  // namespace papaya::executor::testing
