#include "executor/storage/saved.h"

#include "executor/storage/adaptive.h"

namespace papaya::executor {
namespace {

struct StoredSlots : torch::CustomClassHolder {
  std::vector<c10::intrusive_ptr<Stored>> slots;
};

constexpr const char* slots_key = "papaya_slots";
constexpr int probe_bits = 2;

}  // namespace

c10::intrusive_ptr<Stored> store_slot(const Layer& layer, size_t index, const at::Tensor& t) {
  return store(t, layer.slots().at(index).kind, layer.store_spec(index));
}

c10::intrusive_ptr<Stored> store_operand(const Layer& layer, const std::string& name, const at::Tensor& t) {
  return layer.has_slot(name) ? store_slot(layer, layer.slot_index(name), t) : c10::intrusive_ptr<Stored>();
}

void stash(AutogradContext* ctx, std::vector<c10::intrusive_ptr<Stored>> slots) {
  auto holder = c10::make_intrusive<StoredSlots>();
  holder->slots = std::move(slots);
  ctx->saved_data[slots_key] = c10::IValue::make_capsule(std::move(holder));
}

c10::intrusive_ptr<torch::CustomClassHolder> take_capsule(AutogradContext* ctx, const std::string& key) {
  const auto it = ctx->saved_data.find(key);
  TORCH_CHECK(it != ctx->saved_data.end(), "backward ran twice through a MOM-aware layer (its stored tensors are gone)");
  auto capsule = it->second.toCapsule();
  ctx->saved_data.erase(it);
  return capsule;
}

Unstashed unstash(AutogradContext* ctx) {
  const auto holder = c10::static_intrusive_pointer_cast<StoredSlots>(take_capsule(ctx, slots_key));
  Unstashed out;
  out.stored = holder->slots;
  for (const auto& s : out.stored) out.tensors.push_back(s ? s->restore() : at::Tensor());
  return out;
}

void Unstashed::estimate_sensitivity(const Gradients& gradients, const variable_list& exact) const {
  for (size_t i = 0; i < stored.size(); ++i) {
    AdaptiveBits* adaptive = stored[i] ? stored[i]->adaptive() : nullptr;
    if (!adaptive || !adaptive->estimating()) continue;
    const at::Tensor& t = tensors[i];
    const QuantLayout probe{probe_bits, stored[i]->layout().group_size, t.numel(), stored[i]->layout().head_numel};
    std::vector<at::Tensor> perturbed = tensors;
    perturbed[i] = dequantize(quantize(t, probe), probe, t.sizes(), t.scalar_type());
    const variable_list changed = gradients(perturbed);
    double change = 0;
    for (size_t j = 0; j < exact.size(); ++j) {
      if (exact[j].defined() && changed[j].defined()) {
        change += (changed[j].to(at::kFloat) - exact[j].to(at::kFloat)).pow(2).sum().item<double>();
      }
    }
    const double levels = (1 << probe_bits) - 1;
    adaptive->report(stored[i]->adaptive_index(), change * levels * levels / static_cast<double>(t.numel()), t.numel());
  }
}

}  // namespace papaya::executor
