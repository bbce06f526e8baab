#include "executor/networks/attention_core.h"

#include <optional>

#include "executor/random_state.h"
#include "executor/storage/saved.h"

namespace papaya::executor {
namespace {

using torch::autograd::Function;

struct CoreState : torch::CustomClassHolder {
  const AttentionCore* core = nullptr;
  std::optional<RandomState> random;  // with a dropout
};

constexpr const char* state_key = "papaya_attention_core";

// `t`, the operand `name` of `layer`, stored as its slot says; raw where the
// layer keeps no such slot (the core needs it whatever the layer's gradients).
c10::intrusive_ptr<Stored> kept(const Layer& layer, const std::string& name, const at::Tensor& t) {
  return layer.has_slot(name) ? store_operand(layer, name, t) : store(t, model::SlotKind::activation, StoreSpec{});
}

struct CoreCheckpoint : Function<CoreCheckpoint> {
  static at::Tensor forward(AutogradContext* ctx, const AttentionCore* core, const at::Tensor& q, const at::Tensor& k,
                            const at::Tensor& v) {
    auto state = c10::make_intrusive<CoreState>();
    state->core = core;
    if (core->drop) state->random = RandomState::capture(q.device());
    stash(ctx, {kept(*core->scores, "q", q), kept(*core->scores, "k", k), kept(*core->context, "v", v)});
    ctx->saved_data[state_key] = c10::IValue::make_capsule(std::move(state));
    return core->layers(q, k, v);  // autograd does not record inside a Function's forward
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto state = c10::static_intrusive_pointer_cast<CoreState>(take_capsule(ctx, state_key));
    variable_list inputs;
    {
      const Unstashed saved = unstash(ctx);
      for (const auto& t : saved.tensors) inputs.push_back(t.detach().requires_grad_(true));
    }
    at::Tensor y;
    {
      const std::optional<RandomState> now =
          state->random ? std::optional<RandomState>(RandomState::capture(inputs[0].device())) : std::nullopt;
      if (state->random) state->random->restore();
      const torch::AutoGradMode with_grad(true);
      const Layer::NativePath native;
      y = state->core->layers(inputs[0], inputs[1], inputs[2]);
      if (now) now->restore();
    }
    variable_list grads = torch::autograd::grad({y}, inputs, {grad[0]});
    return {at::Tensor(), grads[0], grads[1], grads[2]};
  }
};

}  // namespace

bool AttentionCore::recomputed() const {
  if (fused) return false;  // it holds no probabilities to recompute
  // A softmax that no backward runs through (a frozen front) saves nothing.
  return !softmax->slots().empty() && model::recomputes(softmax->store_spec(0).strategy.form);
}

torch::Tensor AttentionCore::run(torch::Tensor q, torch::Tensor k, torch::Tensor v) const {
  if (fused) return fused->forward(std::move(q), std::move(k), std::move(v));
  if (recomputed() && torch::GradMode::is_enabled()) return CoreCheckpoint::apply(this, q, k, v);
  return layers(std::move(q), std::move(k), std::move(v));
}

torch::Tensor AttentionCore::layers(torch::Tensor q, torch::Tensor k, torch::Tensor v) const {
  // Every tensor is released once its last layer is done with it, so a plan
  // that stores it in another form frees the raw tensor then.
  torch::Tensor h = scores->forward(q, k);
  q.reset();
  k.reset();
  h = softmax->forward(h);
  if (drop) h = drop->forward(h);
  h = context->forward(h, v);
  return h;
}

AttentionCore attention_core_of(torch::nn::Module& parent, const model::TransformerConfig& c, bool causal, int64_t window,
                                const std::shared_ptr<SequenceTables>& tables) {
  AttentionCore core;
  if (c.fused_attention()) {
    core.fused =
        parent.register_module("fused", std::make_shared<FusedAttention>(c.head_dim(), causal, c.attention_dropout, window));
    if (c.attention_scale > 0) core.fused->scale = c.attention_scale;
    core.fused->softcap = c.attention_softcap;
    if (c.attention_sinks) core.fused->add_sinks(c.heads);
    return core;
  }
  core.scores = parent.register_module("scores", std::make_shared<AttentionScores>(c.head_dim(), causal, tables));
  if (c.attention_scale > 0) core.scores->scale = c.attention_scale;
  core.softmax = parent.register_module("softmax", std::make_shared<Softmax>());
  if (c.attention_dropout > 0) core.drop = parent.register_module("drop", std::make_shared<Dropout>(c.attention_dropout));
  core.context = parent.register_module("context", std::make_shared<AttentionContext>());
  return core;
}

}  // namespace papaya::executor
