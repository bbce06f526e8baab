#include "executor/optimizer.h"

#include <unordered_set>

#include "executor/distributed/parameter_storage.h"

namespace papaya::executor {
namespace {
// What `t` holds: nothing once its storage is let go (another ZeRO-3 rank's weight, another stage's).
int64_t nbytes(const torch::Tensor& t) {
  if (!t.defined() || (t.has_storage() && storage_let_go(t))) return 0;
  return static_cast<int64_t>(t.numel() * t.element_size());
}
}  // namespace

std::unique_ptr<torch::optim::AdamW> make_optimizer(Network& network, double lr, double weight_decay,
                                                    const std::optional<std::vector<torch::Tensor>>& shard) {
  auto optimizer = std::make_unique<torch::optim::AdamW>(shard.value_or(network.trainable_parameters()),
                                                         torch::optim::AdamWOptions(lr).weight_decay(weight_decay));
  {
    const torch::NoGradGuard no_grad;
    for (auto& p : network.trainable_parameters()) {
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    }
  }
  // A step at learning rate 0 on zero gradients makes AdamW's moments (zeros)
  // and changes no weight (decay multiplies by 1, the update is 0); its step
  // counts go back to 0, so the state is the one the first step would make.
  auto& options = static_cast<torch::optim::AdamWOptions&>(optimizer->param_groups().front().options());
  options.lr(0);
  optimizer->step();
  options.lr(lr);
  for (auto& entry : optimizer->state()) static_cast<torch::optim::AdamWParamState&>(*entry.second).step(0);
  return optimizer;
}

int64_t static_bytes(const Network& network, const torch::optim::Optimizer& optimizer) {
  int64_t total = network.stored_weight_bytes() + network.fp8_state_bytes();
  std::unordered_set<const void*> held;  // the storages counted so far
  const auto storage = [](const torch::Tensor& t) { return t.storage().unsafeGetStorageImpl(); };
  for (const auto& p : network.parameters()) {
    for (const auto& t : {p, p.grad()}) {
      if (!t.defined()) continue;
      total += nbytes(t);
      if (t.has_storage()) held.insert(storage(t));
    }
  }
  // A ZeRO shard's spans: views of the weights and (ZeRO-1) of their
  // gradients, counted above, or gradients (ZeRO-2/3) and values (ZeRO-3)
  // of their own.
  for (const auto& group : optimizer.param_groups()) {
    for (const auto& p : group.params()) {
      for (const auto& t : {p, p.grad()}) {
        if (t.defined() && t.has_storage() && held.insert(storage(t)).second) total += nbytes(t);
      }
    }
  }
  for (const auto& [key, state] : optimizer.state()) {
    const auto& s = static_cast<const torch::optim::AdamWParamState&>(*state);
    total += nbytes(s.exp_avg()) + nbytes(s.exp_avg_sq()) + nbytes(s.max_exp_avg_sq());
  }
  return total;
}

}  // namespace papaya::executor
