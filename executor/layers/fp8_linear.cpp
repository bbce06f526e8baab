#include "executor/layers/fp8_linear.h"

#include "executor/layer.h"
#include "executor/storage/fp8_codes.h"
#include "executor/storage/saved.h"
#include "executor/storage/stored.h"

namespace papaya::executor {
namespace {

using model::Fp8Format;
using model::Fp8Recipe;
using torch::autograd::Function;

constexpr int64_t input_column = 0, weight_column = 1, output_column = 2, output_gradient_column = 3,
                  input_gradient_column = 4;

// An operand scaled, cast and read back in bf16, with the scale it took.
struct Cast {
  torch::Tensor values;  // bf16, times `scale`
  torch::Tensor scale;
};

Cast cast(const torch::Tensor& t, const torch::Tensor& scale, Fp8Format format) {
  return {fp8_decode(fp8_encode(t, scale, format), format, torch::kBFloat16), scale};
}

// One scale for the whole tensor (tensorwise).
Cast cast_whole(const torch::Tensor& t, Fp8Format format) {
  return cast(t, fp8_scale(t.detach().abs().max(), format), format);
}

// A scale along `dim` of a matrix's each row (dim 1) or column (dim 0),
// rounded to a power of two (torchao's rowwise recipe).
Cast cast_along(const torch::Tensor& t, int64_t dim, Fp8Format format) {
  return cast(t, fp8_scale(t.detach().abs().amax(dim, true), format, true), format);
}

// a (m x k) times b^T (b: n x k), unscaled by a's (m x 1 or 1) and b's
// (n x 1 or 1) scales.
torch::Tensor scaled_mm(const Cast& a, const Cast& b) {
  torch::Tensor out = a.values.mm(b.values.t());
  out.mul_(a.scale.reciprocal());
  return out.mul_(b.scale.reciprocal().t());
}

void record_amax(Fp8DelayedState& s, int64_t column, const torch::Tensor& t) {
  const torch::NoGradGuard no_grad;
  const int64_t row = (s.steps - 1) % model::fp8_amax_history_length;
  torch::Tensor cell = s.amax_history[row][column];
  cell.copy_(torch::maximum(cell, t.detach().abs().max().to(torch::kFloat)));
}

double scale_of(const Fp8DelayedState& s, int64_t column) { return s.scales[column].item<double>(); }

// A scale as a 0-dim fp32 tensor (which scales tensors on any device).
torch::Tensor scalar(double value) { return torch::full({}, value, torch::kFloat); }

// The forward product of x (rows x in) in the recipe's casts.
torch::Tensor forward_product(const Fp8Linear& fp8, const Fp8Input& in, const torch::Tensor& x2, const torch::Tensor& weight) {
  switch (fp8.recipe) {
    case Fp8Recipe::tensorwise: return scaled_mm(cast_whole(x2, Fp8Format::e4m3), cast_whole(weight, Fp8Format::e4m3));
    case Fp8Recipe::rowwise:
      return scaled_mm(cast_along(x2, 1, Fp8Format::e4m3), cast_along(weight, 1, Fp8Format::e4m3));
    case Fp8Recipe::delayed: {
      Fp8DelayedState& s = *fp8.delayed;
      const Cast xq{fp8_decode(in.saved.reshape({-1, in.saved.size(-1)}), Fp8Format::e4m3, torch::kBFloat16),
                    scalar(in.scale)};
      const Cast wq{fp8_decode(s.weight_codes, Fp8Format::e4m3, torch::kBFloat16), scalar(s.weight_scale)};
      return scaled_mm(xq, wq);
    }
    case Fp8Recipe::none: break;
  }
  TORCH_CHECK(false, "an FP8 linear without a recipe");
}

struct Gradients {
  torch::Tensor input, weight;
};

// The input's gradient g W and (where it trains) the weight's g^T x, g
// (rows x out) and x (rows x in, or its codes) as the recipe casts them.
Gradients backward_products(const Fp8Linear& fp8, const torch::Tensor& g2, const torch::Tensor& x2, double x_scale,
                            const torch::Tensor& weight, bool weight_gradient) {
  Gradients out;
  switch (fp8.recipe) {
    case Fp8Recipe::tensorwise: {
      const Cast gq = cast_whole(g2, Fp8Format::e5m2);
      out.input = scaled_mm(gq, cast_whole(weight.t(), Fp8Format::e4m3));
      if (weight_gradient) out.weight = scaled_mm(cast_whole(g2.t(), Fp8Format::e5m2), cast_whole(x2.t(), Fp8Format::e4m3));
      return out;
    }
    case Fp8Recipe::rowwise:
      // Each product's operands scaled along the dimension it sums over.
      out.input = scaled_mm(cast_along(g2, 1, Fp8Format::e4m3), cast_along(weight.t(), 1, Fp8Format::e4m3));
      if (weight_gradient) {
        out.weight = scaled_mm(cast_along(g2.t(), 1, Fp8Format::e4m3), cast_along(x2.t(), 1, Fp8Format::e4m3));
      }
      return out;
    case Fp8Recipe::delayed: {
      Fp8DelayedState& s = *fp8.delayed;
      const Cast gq = cast(g2, scalar(scale_of(s, output_gradient_column)), Fp8Format::e5m2);
      record_amax(s, output_gradient_column, g2);
      const Cast wt{fp8_decode(s.weight_codes_t, Fp8Format::e4m3, torch::kBFloat16), scalar(s.weight_scale)};
      out.input = scaled_mm(gq, wt);
      record_amax(s, input_gradient_column, out.input);
      if (weight_gradient) {
        const Cast xq{fp8_decode(x2, Fp8Format::e4m3, torch::kBFloat16), scalar(x_scale)};
        out.weight = scaled_mm({gq.values.t(), gq.scale}, {xq.values.t(), xq.scale});
      }
      return out;
    }
    case Fp8Recipe::none: break;
  }
  TORCH_CHECK(false, "an FP8 linear without a recipe");
}

torch::Tensor rows_of(const torch::Tensor& t) { return t.reshape({-1, t.size(-1)}); }

std::vector<int64_t> output_sizes(const torch::Tensor& x, const torch::Tensor& weight) {
  std::vector<int64_t> sizes = x.sizes().vec();
  sizes.back() = weight.size(0);
  return sizes;
}

struct Fp8LinearFunction : Function<Fp8LinearFunction> {
  // An absent bias is nullopt: an undefined tensor cannot be a Function's input.
  static at::Tensor forward(AutogradContext* ctx, const Layer* layer, const Fp8Linear* fp8, const Fp8Input* in,
                            const at::Tensor& x, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                            bool recomputed) {
    if (!layer->slots().empty()) {
      const size_t slot = 0;
      stash(ctx, {recomputed ? store(in->saved, layer->slots()[slot].kind, StoreSpec{}) : store_slot(*layer, slot, in->saved)});
    } else {
      stash(ctx, {});
    }
    ctx->save_for_backward({weight, bias.value_or(at::Tensor())});
    ctx->saved_data["fp8"] = reinterpret_cast<int64_t>(fp8);
    ctx->saved_data["x_scale"] = in->scale;
    ctx->saved_data["x_sizes"] = x.sizes().vec();
    at::Tensor y = forward_product(*fp8, *in, rows_of(x), weight);
    if (bias) y.add_(computed_as(*bias, y));
    y = y.view(output_sizes(x, weight));
    if (fp8->recipe == Fp8Recipe::delayed && !recomputed) record_amax(*fp8->delayed, output_column, y);
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto* fp8 = reinterpret_cast<const Fp8Linear*>(ctx->saved_data["fp8"].toInt());
    const double x_scale = ctx->saved_data["x_scale"].toDouble();
    const std::vector<int64_t> x_sizes = ctx->saved_data["x_sizes"].toIntVector();
    const Unstashed saved = unstash(ctx);
    const auto params = ctx->get_saved_variables();
    const at::Tensor &weight = params[0], &bias = params[1];
    const at::Tensor g2 = rows_of(grad[0]);
    const bool weight_gradient = weight.requires_grad() && !saved.tensors.empty() && saved.tensors[0].defined();
    const auto gradients = [&](const std::vector<at::Tensor>& slots) -> variable_list {
      const at::Tensor x2 = weight_gradient ? rows_of(slots[0]) : at::Tensor();
      const Gradients d = backward_products(*fp8, g2, x2, x_scale, weight, weight_gradient);
      return {d.input.view(x_sizes), gradient_for(weight, d.weight),
              bias.defined() ? gradient_for(bias, g2.sum(0)) : at::Tensor()};
    };
    const variable_list out = gradients(saved.tensors);
    if (fp8->recipe == Fp8Recipe::delayed) {
      fp8->delayed->step_done = true;
    } else {
      saved.estimate_sensitivity(gradients, out);
    }
    return {at::Tensor(), at::Tensor(), at::Tensor(), out[0], out[1], out[2], at::Tensor()};
  }
};

}  // namespace

std::shared_ptr<Fp8DelayedState> make_fp8_delayed_state(const torch::Tensor& weight) {
  auto s = std::make_shared<Fp8DelayedState>();
  const auto options = weight.options().requires_grad(false);
  s->weight_codes = torch::zeros(weight.sizes(), options.dtype(torch::kByte));
  s->weight_codes_t = torch::zeros({weight.size(1), weight.size(0)}, options.dtype(torch::kByte));
  s->amax_history = torch::zeros({model::fp8_amax_history_length, model::fp8_tensors_per_layer}, options.dtype(torch::kFloat));
  s->scales = torch::ones({model::fp8_tensors_per_layer}, options.dtype(torch::kFloat));
  return s;
}

Fp8Input fp8_input(const Fp8Linear& fp8, const torch::Tensor& x, bool recomputed) {
  if (fp8.recipe != Fp8Recipe::delayed) return {x, 1};
  Fp8DelayedState& s = *fp8.delayed;
  const torch::NoGradGuard no_grad;
  if (!recomputed && s.step_done) {
    // A new step: the scales from the history's largest amax of each tensor
    // (those never seen keep theirs), then this step's row, cleared.
    s.step_done = false;
    if (s.steps > 0) {
      const torch::Tensor amax = s.amax_history.amax(0);
      torch::Tensor scales = fp8_scale(amax, Fp8Format::e4m3);
      scales.narrow(0, output_gradient_column, 2).copy_(fp8_scale(amax.narrow(0, output_gradient_column, 2), Fp8Format::e5m2));
      s.scales.copy_(torch::where(amax.gt(0), scales, s.scales));
    }
    ++s.steps;
    s.amax_history[(s.steps - 1) % model::fp8_amax_history_length].zero_();
  }
  Fp8Input in;
  in.scale = scale_of(s, input_column);
  in.saved = fp8_encode(x, scalar(in.scale), Fp8Format::e4m3);
  if (!recomputed) record_amax(s, input_column, x);
  return in;
}

torch::Tensor fp8_linear(const Layer& layer, const Fp8Linear& fp8, const Fp8Input& in, const torch::Tensor& x,
                         const torch::Tensor& weight, const torch::Tensor& bias, bool recomputed) {
  if (fp8.recipe == Fp8Recipe::delayed) {
    // The FP8 weight and its transpose, cast once a forward into the state.
    Fp8DelayedState& s = *fp8.delayed;
    const torch::NoGradGuard no_grad;
    if (!recomputed) record_amax(s, weight_column, weight);
    s.weight_scale = scale_of(s, weight_column);
    s.weight_codes.copy_(fp8_encode(weight, scalar(s.weight_scale), Fp8Format::e4m3));
    s.weight_codes_t.copy_(s.weight_codes.t());
  }
  if (!torch::GradMode::is_enabled() || !layer.differentiated()) {
    // Nothing to save: the forward product alone.
    const torch::NoGradGuard no_grad;
    at::Tensor y = forward_product(fp8, in, rows_of(x), weight);
    if (bias.defined()) y.add_(computed_as(bias, y));
    // A layer no backward runs through ends its step here.
    if (fp8.delayed && !layer.differentiated()) fp8.delayed->step_done = true;
    return y.view(output_sizes(x, weight));
  }
  return Fp8LinearFunction::apply(&layer, &fp8, &in, x, weight,
                                  bias.defined() ? c10::optional<at::Tensor>(bias) : c10::nullopt, recomputed);
}

}  // namespace papaya::executor
