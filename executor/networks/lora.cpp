#include "executor/networks/lora.h"

#include <algorithm>

#include "executor/data.h"

namespace papaya::executor {
namespace {

bool is_adapter(const std::string& path) { return path.find("_lora_") != std::string::npos; }

// Records, for each layer, which of its inputs require a gradient as it
// runs, and whether one of those or of its own parameters does.
class GradientMarker : public LayerObserver {
 public:
  void forward_begin(const Layer& layer, std::vector<torch::Tensor*>& inputs) override {
    std::vector<bool>& needed = inputs_needed[&layer];
    needed.clear();
    for (const torch::Tensor* t : inputs) needed.push_back(t->defined() && t->requires_grad());
    bool on = std::find(needed.begin(), needed.end(), true) != needed.end();
    for (const auto& p : layer.parameters(/*recurse=*/false)) on = on || p.requires_grad();
    differentiated[&layer] = on;
  }
  void saved(const Layer&, const Slot&, const torch::Tensor&) override {}
  void forward_end(const Layer&, torch::Tensor&) override {}
  std::map<const Layer*, bool> differentiated;
  std::map<const Layer*, std::vector<bool>> inputs_needed;
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
  b_->output_scale = lora->scale();
  torch::NoGradGuard no_grad;
  b_->weight.zero_();
}

torch::Tensor Projection::forward(const torch::Tensor& x) const {
  torch::Tensor y = base->forward(x);
  if (!a_) return y;
  return y + b_->forward(a_->forward(drop_ ? drop_->forward(x) : x));
}

void freeze_all_but_adapters(Network& network) {
  for (Layer* layer : network.layers()) {
    if (!is_adapter(layer->path())) layer->freeze();
  }
  GradientMarker marker;
  const bool training = network.is_training();
  network.eval();  // no dropout drawn
  {
    const ObserverGuard guard(&marker);
    network.loss(make_synthetic_data(network.config(), torch::kCPU, 0)->next(network.config().smallest_batch()));
  }
  network.train(training);
  for (Layer* layer : network.layers()) {
    layer->set_differentiated(marker.differentiated[layer]);
    layer->set_input_gradients(marker.inputs_needed[layer]);
  }
  network.drop_segments_without_input();
}

}  // namespace papaya::executor
