#include "executor/plan_apply.h"

#include <map>

#include "executor/storage/rounding.h"
#include "model/error.h"

namespace papaya::executor {
namespace {

using model::Form;

// "path:slot" or segment path of the first thing the plan swaps, "" if none.
std::string first_swapped(const model::Plan& plan, const model::NetworkLayout& layout) {
  for (const auto& layer : layout.layers) {
    if (!layer.segment.empty() && plan.segment(layer.segment).input.swap) return layer.segment + " (segment input)";
    for (const auto& slot : layer.slots) {
      if (plan.tensor(layer.path, slot.name).swap) return model::tensor_key(layer.path, slot.name);
    }
  }
  return "";
}

// The spec of the first slot that saves `layer`'s output and is stored, or keep.
StoreSpec consumer_spec(const Network& network, const model::LayoutLayer& layer) {
  for (const auto& key : layer.output_saved_by) {
    const size_t colon = key.rfind(':');
    const Layer* consumer = network.find_layer(key.substr(0, colon));
    if (!consumer) continue;
    const Segment* segment = network.find_segment(consumer->segment());
    if (segment && segment->strategy().recompute) continue;
    const StoreSpec& spec = consumer->store_spec(consumer->slot_index(key.substr(colon + 1)));
    if (!model::drops_tensor(spec.strategy.form)) return spec;
  }
  return {};
}

}  // namespace

void AppliedPlan::begin_step(int step) {
  for (auto& a : adaptive_) a->begin_step(step);
}

AppliedPlan apply_plan(Network& network, const model::Plan& plan, const model::NetworkLayout& layout,
                       const PlanOptions& options) {
  const torch::Device device = network.parameters().front().device();
  const std::string swapped = first_swapped(plan, layout);
  if (!swapped.empty() && !device.is_cuda()) {
    throw InputError("plan '" + plan.name + "' swaps " + swapped + " to host memory, which needs a CUDA device (this run is on " +
                     device.str() + ")");
  }
  seed_rounding(options.rounding_seed);
  AppliedPlan applied;
  std::map<int, std::shared_ptr<AdaptiveBits>> by_budget;
  for (auto* segment : network.segments()) segment->set_strategy(plan.segment(segment->path()));
  for (auto* layer : network.layers()) {
    const model::LayoutLayer* desc = layout.find_layer(layer->path());
    TORCH_CHECK(desc, "the layout has no layer ", layer->path());
    for (size_t i = 0; i < layer->slots().size(); ++i) {
      const model::LayoutSlot& slot = desc->slots.at(i);
      StoreSpec spec{plan.tensor(layer->path(), slot.name)};
      if (model::chooses_bits(spec.strategy.form)) {
        auto& controller = by_budget[spec.strategy.bits];
        if (!controller) {
          controller = std::make_shared<AdaptiveBits>(spec.strategy.bits, options.adaptive_every);
          applied.adaptive_.push_back(controller);
        }
        // Slots sharing a storage share its bits, hence one stored copy.
        spec.adaptive = controller;
        spec.adaptive_index = controller->add(slot.storage.empty() ? model::tensor_key(layer->path(), slot.name) : slot.storage);
      }
      layer->set_store_spec(i, std::move(spec));
    }
  }
  // Inverted activations store their output as its consumer does, now that
  // every consumer's spec is set.
  for (auto* layer : network.layers()) {
    StoreSpec* output_spec = layer->inverted_output_spec();
    if (!output_spec) continue;
    *output_spec = StoreSpec{};
    if (layer->slots().empty() || !model::derives_from_output(layer->store_spec(0).strategy.form)) continue;
    const model::LayoutLayer* desc = layout.find_layer(layer->path());
    TORCH_CHECK(desc, "the layout has no layer ", layer->path());
    *output_spec = consumer_spec(network, *desc);
  }
  return applied;
}

}  // namespace papaya::executor
