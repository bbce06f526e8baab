#include "planner/variance.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "model/plan.h"
#include "model/strategy_table.h"

namespace papaya::planner {
namespace {

// Which stored forms of one storage add variance, each counted once with
// the most elements any of its slots stores in it.
double storage_variance(const std::vector<model::TensorStrategy>& per_slot, const std::vector<double>& numel) {
  std::vector<std::pair<model::TensorStrategy, double>> forms;
  for (size_t k = 0; k < per_slot.size(); ++k) {
    if (stored_variance(per_slot[k], 1) == 0) continue;
    auto it = std::find_if(forms.begin(), forms.end(), [&](const auto& f) { return f.first == per_slot[k]; });
    if (it == forms.end()) {
      forms.push_back({per_slot[k], numel[k]});
    } else {
      it->second = std::max(it->second, numel[k]);
    }
  }
  double total = 0;
  for (const auto& [form, n] : forms) total += stored_variance(form, n);
  return total;
}

}  // namespace

double stored_variance(const model::TensorStrategy& strategy, double numel) {
  const int bits = model::variance_bits(strategy);
  if (bits <= 1) return 0;  // lossless, or a 1-bit mask: exact
  const double levels = std::pow(2.0, bits) - 1;
  return numel / (levels * levels);
}

VarianceProxy::VarianceProxy(const model::LayerModel& model, const model::PlanSpace& space)
    : space_(space), layers_(static_cast<int>(model.layers.size())) {
  const double batch = static_cast<double>(space.batch());
  for (size_t i = 0; i < space.slots().size(); ++i) {
    const auto& slot = space.slots()[i];
    const auto& layer = model.layers[static_cast<size_t>(slot.layer)];
    int element_size = 4;
    for (const auto& t : layer.saved) {
      if (model::tensor_key(layer.path, t.slot) == slot.key) element_size = t.element_size;
    }
    slot_numel_.push_back(space.slot_bytes(static_cast<int>(i)) / element_size);
  }
  for (const auto& segment : model.segments) {
    const auto& input = segment.input;
    segment_numel_.push_back(input.per_sample ? input.numel_per_sample * batch : input.numel_per_sample);
  }
  reference_ = of(space.assignment(model::expand_plan_name("quantize-2", model.layout())));
}

double VarianceProxy::of_option(int storage, const model::PlanSpace::Option& option) const {
  std::vector<double> numel;
  for (int i : space_.storages()[static_cast<size_t>(storage)].slots) numel.push_back(slot_numel_[static_cast<size_t>(i)]);
  return storage_variance(option.per_slot, numel);
}

double VarianceProxy::of_segment_input(int segment, const model::TensorStrategy& input) const {
  return stored_variance(input, segment_numel_[static_cast<size_t>(segment)]);
}

double VarianceProxy::of(const model::Assignment& a) const {
  const auto& segments = space_.segments();
  std::vector<bool> recomputed(static_cast<size_t>(layers_), false);
  for (size_t s = 0; s < segments.size(); ++s) {
    if (!a.segments[s].recompute) continue;
    for (int j = segments[s].first_layer; j <= segments[s].last_layer; ++j) recomputed[static_cast<size_t>(j)] = true;
  }
  double total = 0;
  std::vector<model::TensorStrategy> per_slot;
  std::vector<double> numel;
  for (const auto& storage : space_.storages()) {
    per_slot.clear();
    numel.clear();
    for (int i : storage.slots) {
      if (recomputed[static_cast<size_t>(space_.slots()[static_cast<size_t>(i)].layer)]) continue;
      per_slot.push_back(a.slots[static_cast<size_t>(i)]);
      numel.push_back(slot_numel_[static_cast<size_t>(i)]);
    }
    total += storage_variance(per_slot, numel);
  }
  for (size_t s = 0; s < segments.size(); ++s) {
    if (a.segments[s].recompute) total += of_segment_input(static_cast<int>(s), a.segments[s].input);
  }
  return total;
}

}  // namespace papaya::planner
