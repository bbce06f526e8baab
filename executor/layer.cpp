#include "executor/layer.h"

#include <algorithm>

namespace papaya::executor {

namespace {
thread_local LayerObserver* observer = nullptr;
}

ObserverGuard::ObserverGuard(LayerObserver* next) : previous_(observer) { observer = next; }
ObserverGuard::~ObserverGuard() { observer = previous_; }

const Slot& Layer::slot(const std::string& name) const {
  for (const auto& s : slots_) {
    if (s.name == name) return s;
  }
  TORCH_CHECK(false, "layer ", path_, " has no slot ", name);
}

size_t Layer::slot_index(const std::string& name) const { return static_cast<size_t>(&slot(name) - slots_.data()); }

bool Layer::has_slot(const std::string& name) const {
  return std::any_of(slots_.begin(), slots_.end(), [&](const Slot& s) { return s.name == name; });
}

void Layer::set_input_gradients(const std::vector<bool>& needed) {
  if (!product_of_inputs_ || needed.size() != 2 || slots_.size() < 2) return;
  std::vector<Slot> kept;
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (i >= 2 || needed[1 - i]) kept.push_back(slots_[i]);
  }
  if (kept.size() != slots_.size()) reset_slots(std::move(kept));
}

void Layer::set_store_spec(size_t slot, StoreSpec spec) { specs_.at(slot) = std::move(spec); }

void Layer::reset_slots(std::vector<Slot> slots) {
  slots_ = std::move(slots);
  specs_.assign(slots_.size(), StoreSpec{});
}

void Layer::set_differentiated(bool on) {
  differentiated_ = on;
  if (!on) reset_slots({});
}

void Layer::freeze() {
  for (auto& p : parameters(/*recurse=*/false)) p.requires_grad_(false);
}

namespace {
thread_local int native_paths = 0;
}  // namespace

Layer::NativePath::NativePath() { ++native_paths; }
Layer::NativePath::~NativePath() { --native_paths; }
bool Layer::NativePath::active() { return native_paths > 0; }

bool Layer::keeps_all() const {
  for (const auto& spec : specs_) {
    if (!spec.strategy.is_keep()) return false;
  }
  return true;
}

void Layer::set_compute_dtype(torch::ScalarType dtype, bool casts_inputs) {
  compute_dtype_ = dtype;
  casts_inputs_ = casts_inputs;
}

torch::Tensor Layer::cast(const torch::Tensor& parameter) const {
  if (parameter.scalar_type() == compute_dtype_) return parameter;
  torch::Tensor copy = parameter.to(compute_dtype_);
  if (observer) observer->parameter_cast(*this, copy);
  return copy;
}

Layer::Scope::Scope(const Layer& layer, std::vector<torch::Tensor*> inputs) : layer_(layer), observer_(observer) {
  if (observer_) observer_->forward_begin(layer_, inputs);
  if (!layer_.casts_inputs_) return;
  for (torch::Tensor* input : inputs) {
    if (input->is_floating_point() && input->scalar_type() != layer_.compute_dtype_) *input = input->to(layer_.compute_dtype_);
  }
}

void Layer::Scope::saved(const std::string& slot, const torch::Tensor& tensor) const {
  if (observer_ && layer_.differentiated_) observer_->saved(layer_, layer_.slot(slot), tensor);
}

torch::Tensor Layer::Scope::finish(torch::Tensor output) const {
  if (observer_) observer_->forward_end(layer_, output);
  return output;
}

}  // namespace papaya::executor
