#include "executor/networks/lora.h"

#include <algorithm>

#include "executor/data.h"

namespace papaya::executor {
namespace {

bool is_adapter(const std::string& path) { return path.find("_lora_") != std::string::npos; }

// Marks each layer by whether an input or one of its own parameters
// requires a gradient as it runs.
class DifferentiatedMarker : public LayerObserver {
 public:
  void forward_begin(const Layer& layer, std::vector<torch::Tensor*>& inputs) override {
    bool on = std::any_of(inputs.begin(), inputs.end(), [](const torch::Tensor* t) { return t->defined() && t->requires_grad(); });
    for (const auto& p : layer.parameters(/*recurse=*/false)) on = on || p.requires_grad();
    marks[&layer] = on;
  }
  void saved(const Layer&, const Slot&, const torch::Tensor&) override {}
  void forward_end(const Layer&, torch::Tensor&) override {}
  std::map<const Layer*, bool> marks;
};

}  // namespace

Projection::Projection(torch::nn::Module& parent, const std::string& name, int64_t in, int64_t out, bool bias,
                       const model::TransformerConfig& config, const std::string& role) {
  const auto& lora = config.lora;
  base = parent.register_module(name, std::make_shared<Linear>(in, out, bias, lora ? lora->base_weights : model::WeightFormat::fp32));
  if (!lora || std::find(lora->targets.begin(), lora->targets.end(), role) == lora->targets.end()) return;
  if (lora->dropout > 0) drop_ = parent.register_module(name + "_lora_drop", std::make_shared<Dropout>(lora->dropout));
  a_ = parent.register_module(name + "_lora_a", std::make_shared<Linear>(in, lora->rank, false));
  b_ = parent.register_module(name + "_lora_b", std::make_shared<Linear>(lora->rank, out, false));
  torch::NoGradGuard no_grad;
  b_->weight.zero_();
  scale_ = lora->scale();
}

torch::Tensor Projection::forward(const torch::Tensor& x) const {
  torch::Tensor y = base->forward(x);
  if (!a_) return y;
  return y + b_->forward(a_->forward(drop_ ? drop_->forward(x) : x)) * scale_;
}

void freeze_all_but_adapters(Network& network) {
  for (Layer* layer : network.layers()) {
    if (!is_adapter(layer->path())) layer->freeze();
  }
  DifferentiatedMarker marker;
  const bool training = network.is_training();
  network.eval();  // no dropout drawn
  {
    const ObserverGuard guard(&marker);
    network.loss(make_synthetic_data(network.config(), torch::kCPU, 0)->next(network.config().smallest_batch()));
  }
  network.train(training);
  for (Layer* layer : network.layers()) layer->set_differentiated(marker.marks[layer]);
  network.drop_segments_without_input();
}

}  // namespace papaya::executor
