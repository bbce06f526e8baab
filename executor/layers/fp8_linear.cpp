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

constexpr int64_t input_column = 0, weight_column = 1, output_column = 2, output_gradient_column = 3, input_gradient_column = 4;

// An operand cast: its codes and the scale they were cast with (a scalar,
// or one a row: (rows, 1)).
struct Cast {
  torch::Tensor codes;
  torch::Tensor scale;
  Fp8Format format;
};

Cast cast(const torch::Tensor& t, const torch::Tensor& scale, Fp8Format format) {
  return {fp8_encode(t, scale, format), scale, format};
}

// One scale for the whole tensor (tensorwise).
Cast cast_whole(const torch::Tensor& t, Fp8Format format) { return cast(t, fp8_scale(fp8_amax(t), format), format); }

// A scale for each row of a matrix, a power of two (torchao's rowwise
// recipe: each operand scaled along the dimension its product sums).
Cast cast_rows(const torch::Tensor& t, Fp8Format format) { return cast(t, fp8_scale(fp8_amax(t, 1), format, true), format); }

// Rows [first, first + count) of an operand, read back in bf16.
torch::Tensor read_rows(const Cast& c, int64_t first, int64_t count) {
  return fp8_decode(c.codes.narrow(0, first, count), c.format, torch::kBFloat16);
}

torch::Tensor scale_rows(const Cast& c, int64_t first, int64_t count) {
  return c.scale.dim() == 0 ? c.scale : c.scale.narrow(0, first, count);
}

// a (m x k) times b^T (b: n x k), unscaled, in bf16: a tile of each read
// back at a time, so that the emulation's scratch is bounded (an FP8
// product reads the codes themselves).
torch::Tensor scaled_mm(const Cast& a, const Cast& b) {
  const int64_t m = a.codes.size(0), n = b.codes.size(0), k = a.codes.size(1);
  torch::Tensor out = torch::empty({m, n}, a.codes.options().dtype(torch::kBFloat16));
  const int64_t step = std::max<int64_t>(1, fp8_tile_elements / std::max<int64_t>(1, k));
  for (int64_t i = 0; i < m; i += step) {
    const int64_t rows = std::min(step, m - i);
    const torch::Tensor a_tile = read_rows(a, i, rows);
    const torch::Tensor a_scale = scale_rows(a, i, rows).reciprocal();
    for (int64_t j = 0; j < n; j += step) {
      const int64_t cols = std::min(step, n - j);
      torch::Tensor block = out.narrow(0, i, rows).narrow(1, j, cols);
      at::mm_out(block, a_tile, read_rows(b, j, cols).t());
      block.mul_(a_scale).mul_(scale_rows(b, j, cols).reciprocal().t());
    }
  }
  return out;
}

void record_amax(Fp8DelayedState& s, int64_t column, const torch::Tensor& t) {
  const torch::NoGradGuard no_grad;
  const int64_t row = (s.steps.item<int64_t>() - 1) % model::fp8_amax_history_length;
  torch::Tensor cell = s.amax_history[row][column];
  cell.copy_(torch::maximum(cell, fp8_amax(t).to(torch::kFloat)));
}

double scale_of(const Fp8DelayedState& s, int64_t column) { return s.scales[column].item<double>(); }

// A scale as a 0-dim fp32 tensor (which scales tensors on any device).
torch::Tensor scalar(double value) { return torch::full({}, value, torch::kFloat); }

// The forward product of x (rows x in) in the recipe's casts.
torch::Tensor forward_product(const Fp8Linear& fp8, const Fp8Input& in, const torch::Tensor& x2, const torch::Tensor& weight) {
  switch (fp8.recipe) {
    case Fp8Recipe::tensorwise: return scaled_mm(cast_whole(x2, Fp8Format::e4m3), cast_whole(weight, Fp8Format::e4m3));
    case Fp8Recipe::rowwise: return scaled_mm(cast_rows(x2, Fp8Format::e4m3), cast_rows(weight, Fp8Format::e4m3));
    case Fp8Recipe::delayed: {
      const Fp8DelayedState& s = *fp8.delayed;
      const Cast xq{in.saved.reshape({-1, in.saved.size(-1)}), scalar(in.scale), Fp8Format::e4m3};
      return scaled_mm(xq, {s.weight_codes, scalar(s.weight_scale), Fp8Format::e4m3});
    }
    case Fp8Recipe::none: break;
  }
  TORCH_CHECK(false, "an FP8 linear without a recipe");
}

struct Gradients {
  torch::Tensor input, weight;
};

// A cast operand's transpose: the codes' (a view) with its scalar scale.
Cast transposed(const Cast& c) { return {c.codes.t(), c.scale, c.format}; }

// The input's gradient g W and (where it trains) the weight's g^T x, g
// (rows x out) and x (rows x in, or its codes) as the recipe casts them.

Gradients backward_products(const Fp8Linear& fp8, const torch::Tensor& g2, const torch::Tensor& x2, double x_scale,
                            const torch::Tensor& weight, bool weight_gradient) {
  Gradients out;
  switch (fp8.recipe) {
    case Fp8Recipe::tensorwise: {
      const Cast gq = cast_whole(g2, Fp8Format::e5m2);
      out.input = scaled_mm(gq, cast_whole(weight.t(), Fp8Format::e4m3));
      if (weight_gradient) out.weight = scaled_mm(transposed(gq), cast_whole(x2.t(), Fp8Format::e4m3));
      return out;
    }
    case Fp8Recipe::rowwise:
      // Each product's operands scaled along the dimension it sums over.
      out.input = scaled_mm(cast_rows(g2, Fp8Format::e4m3), cast_rows(weight.t(), Fp8Format::e4m3));
      if (weight_gradient) out.weight = scaled_mm(cast_rows(g2.t(), Fp8Format::e4m3), cast_rows(x2.t(), Fp8Format::e4m3));
      return out;
    case Fp8Recipe::delayed: {
      Fp8DelayedState& s = *fp8.delayed;
      const Cast gq = cast(g2, scalar(scale_of(s, output_gradient_column)), Fp8Format::e5m2);
      record_amax(s, output_gradient_column, g2);
      out.input = scaled_mm(gq, {s.weight_codes_t, scalar(s.weight_scale), Fp8Format::e4m3});
      record_amax(s, input_gradient_column, out.input);
      if (weight_gradient) out.weight = scaled_mm(transposed(gq), {x2.t(), scalar(x_scale), Fp8Format::e4m3});
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
      fp8->delayed->step_done.fill_(true);
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
  s->steps = torch::zeros({}, options.dtype(torch::kLong));
  s->step_done = torch::ones({}, options.dtype(torch::kBool));
  return s;
}

Fp8Input fp8_input(const Fp8Linear& fp8, const torch::Tensor& x, bool recomputed) {
  if (fp8.recipe != Fp8Recipe::delayed) return {x, 1};
  Fp8DelayedState& s = *fp8.delayed;
  const torch::NoGradGuard no_grad;
  if (!recomputed && s.step_done.item<bool>()) {
    // A new step: the scales from the history's largest amax of each tensor
    // (those never seen keep theirs), then this step's row, cleared.
    s.step_done.fill_(false);
    if (s.steps.item<int64_t>() > 0) {
      const torch::Tensor amax = s.amax_history.amax(0);
      torch::Tensor scales = fp8_scale(amax, Fp8Format::e4m3);
      scales.narrow(0, output_gradient_column, 2).copy_(fp8_scale(amax.narrow(0, output_gradient_column, 2), Fp8Format::e5m2));
      s.scales.copy_(torch::where(amax.gt(0), scales, s.scales));
    }
    s.steps.add_(1);
    s.amax_history[(s.steps.item<int64_t>() - 1) % model::fp8_amax_history_length].zero_();
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
    if (fp8.delayed && !layer.differentiated()) fp8.delayed->step_done.fill_(true);
    return y.view(output_sizes(x, weight));
  }
  return Fp8LinearFunction::apply(&layer, &fp8, &in, x, weight, bias.defined() ? c10::optional<at::Tensor>(bias) : c10::nullopt,
                                  recomputed);
}

}  // namespace papaya::executor
