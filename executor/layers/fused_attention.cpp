#include "executor/layers/fused_attention.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <functional>
#include <mutex>

#include "executor/layers/attention_blocks.h"
#include "executor/storage/saved.h"

namespace papaya::executor {
namespace moms {
namespace {

using torch::autograd::Function;

// Keep's slots, reported as a native path reports them.
using SlotReport = std::function<void(const std::string& slot, const at::Tensor& tensor)>;

constexpr const char* slot_names[] = {"q", "k", "v", "output", "lse"};

// A seed for one call's dropout mask, drawn from the default CPU generator,
// whose state a recomputed segment puts back (so that it draws the same).
uint64_t draw_seed() {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  const std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get<at::CPUGeneratorImpl>()->random64();
}

// (batch, heads, tokens, head_dim) laid out token-major as (batch, tokens,
// heads·head_dim): a view.
at::Tensor token_major(const at::Tensor& heads_first) {
  return heads_first.transpose(1, 2).view({heads_first.size(0), heads_first.size(2), -1});
}

// One call of `layer`: in training with dropout, a new seed.
BlockAttention call_of(const FusedAttention& layer) {
  BlockAttention how{layer.scale,   layer.causal, layer.is_training() ? layer.dropout : 0.0, 0, layer.window,
                     layer.softcap, layer.sinks};
  if (how.dropout > 0) how.seed = draw_seed();
  return how;
}

struct FusedAttentionFunction : Function<FusedAttentionFunction> {
  // `planned`: the slots stored as the plan says (else as they are: keep, or
  // a recomputation's forward in backward).
  // `sinks`: the layer's, passed for their gradient (empty: none; an
  // undefined input is not one autograd takes).
  static at::Tensor forward(AutogradContext* ctx, const FusedAttention* layer, const at::Tensor& q, const at::Tensor& k,
                            const at::Tensor& v, const at::Tensor& sinks, bool planned, const SlotReport* report) {
    const BlockAttention how = call_of(*layer);
    ctx->saved_data["sinks"] = sinks;  // stash holds the saved variables
    const AttentionOutput out = block_attention_forward(q, k, v, how);
    // The output kept token-major, (batch, tokens, heads·head_dim), as the
    // output projection takes and saves it: one storage, one stored copy.
    const at::Tensor slots[] = {q, k, v, token_major(out.out), out.lse};
    std::vector<c10::intrusive_ptr<Stored>> stored;
    for (size_t i = 0; i < 5; ++i) {
      stored.push_back(planned ? store_slot(*layer, i, slots[i]) : store(slots[i], layer->slots()[i].kind, StoreSpec{}));
      if (report) (*report)(slot_names[i], slots[i]);
    }
    stash(ctx, std::move(stored));
    ctx->saved_data["scale"] = how.scale;
    ctx->saved_data["causal"] = how.causal;
    ctx->saved_data["dropout"] = how.dropout;
    ctx->saved_data["seed"] = static_cast<int64_t>(how.seed);
    ctx->saved_data["window"] = how.window;
    ctx->saved_data["softcap"] = how.softcap;
    return out.out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const Unstashed saved = unstash(ctx);
    BlockAttention how;
    how.scale = ctx->saved_data["scale"].toDouble();
    how.causal = ctx->saved_data["causal"].toBool();
    how.dropout = ctx->saved_data["dropout"].toDouble();
    how.seed = static_cast<uint64_t>(ctx->saved_data["seed"].toInt());
    how.window = ctx->saved_data["window"].toInt();
    how.softcap = ctx->saved_data["softcap"].toDouble();
    const at::Tensor sinks = ctx->saved_data["sinks"].toTensor();
    if (sinks.numel() > 0) how.sinks = sinks;
    const auto gradients = [&](const std::vector<at::Tensor>& s) -> variable_list {
      const at::Tensor& g_out = grad[0];  // (batch, heads, tokens, head_dim)
      const at::Tensor out = s[3].view({g_out.size(0), g_out.size(2), g_out.size(1), g_out.size(3)}).transpose(1, 2);
      const AttentionGradients g = block_attention_backward(g_out, s[0], s[1], s[2], out, s[4], how);
      return {g.q, g.k, g.v, g.sinks};
    };
    const variable_list out = gradients(saved.tensors);
    saved.estimate_sensitivity(gradients, out);
    return {at::Tensor(), out[0], out[1], out[2], out[3], at::Tensor(), at::Tensor()};
  }
};

}  // namespace
}  // namespace moms

FusedAttention::FusedAttention(int64_t head_dim, bool causal, double dropout, int64_t window)
    : Layer(LayerKind::fused_attention, {{"q", SlotKind::activation},
                                         {"k", SlotKind::activation},
                                         {"v", SlotKind::activation},
                                         {"output", SlotKind::activation},
                                         {"lse", SlotKind::stats}}),
      scale(1.0 / std::sqrt(static_cast<double>(head_dim))),
      causal(causal),
      dropout(dropout),
      window(window) {}

torch::Tensor FusedAttention::forward(torch::Tensor q, torch::Tensor k, torch::Tensor v) {
  Scope scope(*this, {&q, &k, &v});
  const bool recorded =
      torch::GradMode::is_enabled() && differentiated() && (q.requires_grad() || k.requires_grad() || v.requires_grad());
  if (!recorded) {
    // Nothing kept (a checkpointed block's forward draws the mask its
    // recomputation draws again); what keep would save is reported, as a
    // native path reports it under no_grad (executor/layout_probe.h's probe).
    const AttentionOutput out = block_attention_forward(q, k, v, moms::call_of(*this));
    const at::Tensor slots[] = {q, k, v, moms::token_major(out.out), out.lse};
    for (size_t i = 0; i < 5; ++i) scope.saved(moms::slot_names[i], slots[i]);
    return scope.finish(out.out);
  }
  const torch::Tensor sinks_or_none = sinks.defined() ? sinks : torch::empty({0});
  if (uses_moms()) return scope.finish(moms::FusedAttentionFunction::apply(this, q, k, v, sinks_or_none, true, nullptr));
  const moms::SlotReport report = [&scope](const std::string& slot, const at::Tensor& t) { scope.saved(slot, t); };
  return scope.finish(moms::FusedAttentionFunction::apply(this, q, k, v, sinks_or_none, false, &report));
}

void FusedAttention::add_sinks(int64_t heads) { sinks = register_parameter("sinks", torch::zeros({heads})); }

}  // namespace papaya::executor
