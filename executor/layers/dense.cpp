#include "executor/layers/dense.h"

#include <cmath>

#include "executor/storage/saved.h"

namespace papaya::executor {

// The MOM-aware linear layer.
namespace moms {
namespace {

using torch::autograd::Function;

// With Linear::gathers_tokens its input is this rank's share of the group's
// tokens, stored as it is and gathered for the products.
struct LinearFunction : Function<LinearFunction> {
  // An absent bias is nullopt: an undefined tensor cannot be a Function's input.
  static at::Tensor forward(AutogradContext* ctx, const Linear* layer, const at::Tensor& input, const at::Tensor& weight,
                            const c10::optional<at::Tensor>& bias) {
    stash(ctx, {store_slot(*layer, 0, input)});
    ctx->save_for_backward({weight, bias.value_or(at::Tensor())});
    ctx->saved_data["layer"] = reinterpret_cast<int64_t>(layer);
    const at::Tensor x = layer->gathers_tokens ? layer->gathers_tokens->gathered(input) : input;
    return at::linear(x, computed_as(weight, x), bias ? computed_as(*bias, x) : at::Tensor());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    TensorGroup* group = reinterpret_cast<const Linear*>(ctx->saved_data["layer"].toInt())->gathers_tokens.get();
    const Unstashed saved = unstash(ctx);
    const auto params = ctx->get_saved_variables();
    const at::Tensor &weight = params[0], &bias = params[1];
    const at::Tensor& g = grad[0];
    const at::Tensor g2 = g.reshape({-1, g.size(-1)});
    const at::Tensor w = computed_as(weight, g);
    const auto gradients = [&](const std::vector<at::Tensor>& slots) -> variable_list {
      const at::Tensor x = group ? group->gathered(slots[0]) : slots[0];
      return {g.matmul(w), gradient_for(weight, g2.t().mm(x.reshape({-1, x.size(-1)}))),
              bias.defined() ? gradient_for(bias, g2.sum(0)) : at::Tensor()};
    };
    variable_list out = gradients(saved.tensors);
    saved.estimate_sensitivity(gradients, out);  // every rank estimates at the same steps: their gathers meet
    // Gathered: the input's gradient is this rank's share of the group's sum.
    return {at::Tensor(), group ? group->scattered_sum(std::move(out[0])) : out[0], out[1], out[2]};
  }
};

torch::Tensor linear(const Linear& layer, const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  return LinearFunction::apply(&layer, x, weight, bias.defined() ? c10::optional<at::Tensor>(bias) : c10::nullopt);
}

// A stored weight's linear: nothing saved but the layer, whose weight is
// loaded again in backward (QLoRA's), so that no loaded copy lives between.
struct StoredLinearFunction : Function<StoredLinearFunction> {
  static at::Tensor forward(AutogradContext* ctx, const Linear* layer, const at::Tensor& x,
                            const c10::optional<at::Tensor>& bias) {
    ctx->saved_data["layer"] = reinterpret_cast<int64_t>(layer);
    ctx->saved_data["bias_trained"] = bias && bias->requires_grad();
    const at::Tensor w = layer->loaded_weight(x.scalar_type());
    return at::linear(x, w, bias ? computed_as(*bias, x) : at::Tensor());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto* layer = reinterpret_cast<const Linear*>(ctx->saved_data["layer"].toInt());
    const at::Tensor& g = grad[0];
    const at::Tensor dx = g.matmul(layer->loaded_weight(g.scalar_type()));
    const at::Tensor db =
        ctx->saved_data["bias_trained"].toBool() ? gradient_for(layer->bias, g.reshape({-1, g.size(-1)}).sum(0)) : at::Tensor();
    return {at::Tensor(), dx, db};
  }
};

torch::Tensor stored_linear(const Linear& layer, const torch::Tensor& x, const torch::Tensor& bias) {
  return StoredLinearFunction::apply(&layer, x, bias.defined() ? c10::optional<at::Tensor>(bias) : c10::nullopt);
}

}  // namespace
}  // namespace moms

Linear::Linear(int64_t in, int64_t out, bool with_bias, model::WeightFormat stored)
    : Layer(LayerKind::linear, {{"input", SlotKind::activation}}) {
  // torch.nn.Linear's initialisation: U(-1/sqrt(in), 1/sqrt(in)).
  const double bound = 1.0 / std::sqrt(static_cast<double>(in));
  if (stored == model::WeightFormat::fp32) {
    weight = register_parameter("weight", torch::empty({out, in}).uniform_(-bound, bound));
  } else {
    // Drawn a few rows at a time: the same values, in the same order.
    stored_ = store_weight(out, in, stored, [&](int64_t, int64_t rows) {
      return torch::empty({rows, in}).uniform_(-bound, bound);
    });
    for (auto [name, tensor] : stored_->tensors()) *tensor = register_buffer(name, *tensor);
  }
  if (with_bias) bias = register_parameter("bias", torch::empty({out}).uniform_(-bound, bound));
  if (stored_) Linear::freeze();
}

torch::Tensor Linear::loaded_weight(torch::ScalarType dtype) const {
  return load_scratch ? load_scratch->load(*stored_, dtype) : load_weight(*stored_, dtype);
}

void Linear::freeze() {
  Layer::freeze();
  reset_slots({});
  frozen_ = true;
}

bool Linear::set_fp8(model::Fp8Recipe recipe) {
  if (recipe == fp8_.recipe) return recipe != model::Fp8Recipe::none;
  TORCH_CHECK(fp8_.recipe == model::Fp8Recipe::none, "a linear layer's FP8 recipe is set once");
  if (recipe != model::Fp8Recipe::none && !stored_) {
    fp8_.recipe = recipe;
    if (recipe == model::Fp8Recipe::delayed) {
      fp8_.delayed = make_fp8_delayed_state(weight);
      register_buffer("fp8_weight", fp8_.delayed->weight_codes);
      register_buffer("fp8_weight_t", fp8_.delayed->weight_codes_t);
      register_buffer("fp8_amax_history", fp8_.delayed->amax_history);
      register_buffer("fp8_scales", fp8_.delayed->scales);
      register_buffer("fp8_steps", fp8_.delayed->steps);
      register_buffer("fp8_step_done", fp8_.delayed->step_done);
    }
  }
  if (fp8_.recipe == model::Fp8Recipe::delayed && has_slot("input")) {
    // Its input as E4M3 codes, which no plan compresses further.
    std::vector<Slot> slots = this->slots();
    slots[slot_index("input")].kind = SlotKind::index;
    reset_slots(std::move(slots));
  }
  return fp8_.recipe != model::Fp8Recipe::none;
}

torch::Tensor Linear::forward(torch::Tensor x) {
  Scope scope(*this, {&x});
  torch::Tensor y;
  if (stored_) {
    y = moms::stored_linear(*this, x, bias);
  } else if (fp8_.recipe != model::Fp8Recipe::none) {
    const bool recomputed = NativePath::active();
    const Fp8Input in = fp8_input(fp8_, x, recomputed);
    if (!frozen_) scope.saved("input", in.saved);
    y = fp8_linear(*this, fp8_, in, x, weight, bias, recomputed);
  } else if (uses_moms() || gathers_tokens) {
    y = moms::linear(*this, x, weight, bias);
  } else {
    if (!frozen_) scope.saved("input", x);
    y = torch::linear(x, cast(weight), bias.defined() ? cast(bias) : torch::Tensor());
  }
  return scope.finish(output_scale == 1 ? y : y * output_scale);
}

Embedding::Embedding(int64_t count, int64_t dim, double scale)
    : Layer(LayerKind::embedding, {{"ids", SlotKind::index}}), scale(scale) {
  weight = register_parameter("weight", torch::randn({count, dim}) * 0.02);
}

Embedding::Embedding(torch::Tensor tied_weight, double scale, int64_t lookahead)
    : Layer(LayerKind::embedding, {{"ids", SlotKind::index}}),
      weight(std::move(tied_weight)),
      scale(scale),
      lookahead_(lookahead) {}

std::vector<torch::Tensor> Embedding::shared_parameters() const {
  if (parameters(/*recurse=*/false).empty()) return {weight};  // tied
  return {};
}

torch::Tensor Embedding::forward(torch::Tensor ids) {
  Scope scope(*this, {});
  ids = ids_ahead(ids, lookahead_);
  if (group_) {
    const int64_t rows = weight.size(0);
    const torch::Tensor local = ids - first_row_;
    const torch::Tensor outside = local.lt(0).logical_or(local.ge(rows)).unsqueeze(-1);
    const torch::Tensor clamped = local.clamp(0, rows - 1);
    scope.saved("ids", clamped);
    torch::Tensor looked_up = group_->sum(torch::embedding(weight, clamped).masked_fill(outside, 0)).to(compute_dtype());
    return scope.finish(scale == 1 ? looked_up : looked_up.mul_(scale));
  }
  scope.saved("ids", ids);
  // The rows are gathered in the table's dtype and only they are cast: a cast
  // of the table would copy all of it, and autograd would hold the copy.
  // Scaled in place: the rows are a new tensor nothing else holds.
  torch::Tensor rows = torch::embedding(weight, ids).to(compute_dtype());
  return scope.finish(scale == 1 ? rows : rows.mul_(scale));
}

void Embedding::split(const std::shared_ptr<TensorGroup>& group) {
  const int64_t rows = weight.size(0) / group->size();
  first_row_ = rows * group->rank();
  const torch::NoGradGuard no_grad;
  weight.set_data(weight.narrow(0, first_row_, rows).clone());
  group_ = group;
}

PositionEmbedding::PositionEmbedding(int64_t positions, int64_t dim) : Layer(LayerKind::position, {}) {
  weight = register_parameter("weight", torch::randn({positions, dim}) * 0.02);
}

torch::Tensor PositionEmbedding::forward(torch::Tensor x) {
  Scope scope(*this, {&x});
  return scope.finish(x + cast(weight).narrow(0, 0, x.size(1)));
}

TokenTypeEmbedding::TokenTypeEmbedding(int64_t types, int64_t dim) : Layer(LayerKind::position, {}) {
  weight = register_parameter("weight", torch::randn({types, dim}) * 0.02);
}

torch::Tensor TokenTypeEmbedding::forward(torch::Tensor x) {
  Scope scope(*this, {&x});
  return scope.finish(x + cast(weight).select(0, 0));
}

ClassToken::ClassToken(int64_t dim) : Layer(LayerKind::class_token, {}) {
  token = register_parameter("token", torch::zeros({1, 1, dim}));
}

torch::Tensor ClassToken::forward(torch::Tensor x) {
  Scope scope(*this, {&x});
  return scope.finish(torch::cat({cast(token).expand({x.size(0), 1, x.size(2)}), x}, 1));
}

}  // namespace papaya::executor
