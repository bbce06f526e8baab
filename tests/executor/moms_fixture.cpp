#include "tests/executor/moms_fixture.h"

#include <cmath>

#include "executor/layout_probe.h"
#include "executor/networks/source_for.h"
#include "model/plan.h"

namespace papaya::executor::testing {

model::NetworkConfig tiny_config(const std::string& name, double dropout) {
  model::NetworkConfig config = model::load_network_config(name);
  if (auto* t = std::get_if<model::TransformerConfig>(&config.body)) t->dropout = dropout;
  if (auto* m = std::get_if<model::MlpConfig>(&config.body)) m->dropout = dropout;
  return config;
}

torch::Tensor on_8bit_grid(torch::IntArrayRef shape) {
  torch::Tensor t = torch::randint(0, 256, shape, torch::kFloat) / 256.0;
  torch::Tensor flat = t.view({-1, 8});
  flat.select(1, 0).fill_(0);
  flat.select(1, 1).fill_(255.0 / 256);
  return t;
}

StoreSpec eight_bits() {
  StoreSpec spec;
  spec.strategy.form = model::Form::quantized;
  spec.strategy.bits = 8;
  return spec;
}

model::NetworkConfig materialized(model::NetworkConfig config) {
  std::get<model::TransformerConfig>(config.body).attention = "materialized";
  config.document["attention"] = "materialized";
  return config;
}

Planned planned(const model::NetworkConfig& config, const model::Plan& plan) {
  torch::manual_seed(0);
  Planned p;
  p.network = source_for(config)->build();
  p.layout = probe_layout(*p.network);
  p.applied = apply_plan(*p.network, plan, p.layout);
  return p;
}

Planned planned(const model::NetworkConfig& config, const std::string& plan) {
  torch::manual_seed(0);
  auto network = source_for(config)->build();
  return planned(config, model::load_plan(plan, probe_layout(*network), config.name));
}

model::Plan recompute_segments(const model::NetworkLayout& layout, const std::string& input) {
  model::Plan plan;
  plan.name = "recompute-segments";
  for (const auto& segment : layout.segments) {
    plan.segments[segment] = model::parse_segment_strategy(input == "keep" ? "recompute" : "recompute+" + input, "t");
  }
  return plan;
}

namespace {
class InputRecorder : public LayerObserver {
 public:
  void forward_begin(const Layer& layer, std::vector<torch::Tensor*>& inputs) override {
    auto& recorded = inputs_by_path[layer.path()];
    for (const auto* t : inputs) recorded.push_back(t->detach().requires_grad_(t->requires_grad()));
  }
  void saved(const Layer&, const Slot&, const torch::Tensor&) override {}
  void forward_end(const Layer&, torch::Tensor&) override {}
  std::map<std::string, std::vector<torch::Tensor>> inputs_by_path;
};
}  // namespace

std::map<std::string, std::vector<torch::Tensor>> layer_inputs(Network& network, const Batch& batch) {
  InputRecorder recorder;
  const ObserverGuard guard(&recorder);
  network.loss(batch);
  return std::move(recorder.inputs_by_path);
}

Step step(Network& network, const Batch& batch, uint64_t seed) {
  network.zero_grad();
  torch::manual_seed(seed);
  const torch::Tensor loss = network.loss(batch);
  loss.backward();
  Step s;
  s.loss = loss.item<double>();
  for (const auto& p : network.named_parameters()) {
    if (p.value().grad().defined()) s.grads[p.key()] = p.value().grad().clone();
  }
  return s;
}

double relative_error(const Step& approx, const Step& exact) {
  double diff = 0, norm = 0;
  for (const auto& [name, g] : exact.grads) {
    diff += (approx.grads.at(name) - g).pow(2).sum().item<double>();
    norm += g.pow(2).sum().item<double>();
  }
  return std::sqrt(diff / norm);
}

bool identical(const Step& a, const Step& b) {
  if (a.grads.size() != b.grads.size()) return false;
  for (const auto& [name, g] : b.grads) {
    if (!torch::equal(a.grads.at(name), g)) return false;
  }
  return true;
}

}  // namespace papaya::executor::testing
