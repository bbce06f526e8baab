#include "executor/networks/fine_tuning.h"

#include <algorithm>
#include <map>

#include "executor/data.h"
#include "executor/layers/dense.h"
#include "model/catalog/layer_parameters.h"

namespace papaya::executor {
namespace {

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

void freeze_for_fine_tuning(Network& network) {
  bool any = false;
  for (Layer* layer : network.layers()) {
    if (!model::frozen_layer(network.config(), layer->path())) continue;
    layer->freeze();
    any = true;
  }
  if (!any) return;
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

void share_load_scratch(Network& network) {
  const auto scratch = std::make_shared<LoadScratch>();
  for (Layer* layer : network.layers()) {
    auto* linear = dynamic_cast<Linear*>(layer);
    if (linear && linear->stored_weight()) linear->load_scratch = scratch;
  }
}

}  // namespace papaya::executor
