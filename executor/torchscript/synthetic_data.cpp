#include "executor/torchscript/synthetic_data.h"

#include <algorithm>

#include "model/error.h"

namespace papaya::executor::torchscript {

at::ScalarType scalar_type(const model::InputSpec& spec) {
  const std::string& dtype = spec.dtype;
  if (dtype == "float32") return at::kFloat;
  if (dtype == "float64") return at::kDouble;
  if (dtype == "float16") return at::kHalf;
  if (dtype == "bfloat16") return at::kBFloat16;
  if (dtype == "int64") return at::kLong;
  if (dtype == "int32") return at::kInt;
  TORCH_CHECK(dtype == "bool", "no dtype ", dtype);  // parse_input_spec lets no other through
  return at::kBool;
}

std::string shape_text(const at::Tensor& t) {
  std::string out = "[";
  for (int64_t d = 0; d < t.dim(); ++d) out += (d ? ", " : "") + std::to_string(t.size(d));
  return out + "]";
}

std::vector<torch::jit::IValue> synthetic_inputs(const std::vector<model::InputSpec>& specs, int64_t batch,
                                                 at::Generator generator) {
  std::vector<torch::jit::IValue> inputs;
  for (const auto& spec : specs) {
    const auto shape = spec.shape(batch);
    const at::ScalarType dtype = scalar_type(spec);
    if (at::isFloatingType(dtype)) {
      inputs.emplace_back(at::randn(shape, generator, at::TensorOptions().dtype(at::kFloat)).to(dtype));
    } else {
      const int64_t high = spec.below.value_or(2);
      inputs.emplace_back(at::randint(0, high, shape, generator, at::TensorOptions().dtype(at::kLong)).to(dtype));
    }
  }
  return inputs;
}

LossKind loss_kind(const torch::jit::IValue& output, std::optional<LossKind> asked, const std::string& label) {
  if (!output.isTensor()) {
    throw InputError(label + ": forward returns a " + output.tagKind() + ", not a tensor papaya can make a loss of");
  }
  const at::Tensor& t = output.toTensor();
  if (!at::isFloatingType(t.scalar_type())) {
    throw InputError(label + ": forward returns " + std::string(c10::toString(t.scalar_type())) +
                     " values: no loss of them has a gradient");
  }
  if (t.dim() == 0) {
    if (asked && *asked != LossKind::output) {
      throw InputError(label + ": forward returns a scalar, which is the loss; no " + to_string(*asked) + " of it");
    }
    return LossKind::output;
  }
  if (asked) {
    if (*asked == LossKind::cross_entropy && t.dim() != 2 && t.dim() != 3) {
      throw InputError(label + ": cross-entropy needs logits [B, C] or [B, T, V]; forward returns " + shape_text(t));
    }
    return *asked;
  }
  if (t.dim() == 2 || t.dim() == 3) return LossKind::cross_entropy;
  throw InputError(label + ": forward returns " + shape_text(t) +
                   ": papaya makes a loss of a scalar, of logits [B, C] or [B, T, V]; ask for one (mse or cross-entropy)");
}

at::Tensor loss_of(const torch::jit::IValue& output, LossKind kind, at::Generator generator, const at::Tensor& target,
                   const Batch::Rows& rows, const std::string& label) {
  const at::Tensor t = output.toTensor();
  // A drawn target: the shape of the whole batch's output, drawn on the CPU
  // whatever the device (the same on each), then this output's rows of it.
  const auto whole = [&](at::IntArrayRef sizes) {
    std::vector<int64_t> out = sizes.vec();
    if (rows.of > 0) out.at(0) = rows.of;
    return out;
  };
  const auto drawn = [&](const at::Tensor& all) {
    return (rows.of > 0 ? all.narrow(0, rows.first, t.size(0)) : all).to(t.device());
  };
  switch (kind) {
    case LossKind::output: return t;
    case LossKind::cross_entropy: {
      const at::Tensor logits = t.reshape({-1, t.size(-1)});
      if (!target.defined()) {
        const at::Tensor labels = drawn(
            at::randint(0, t.size(-1), whole(t.sizes().slice(0, t.dim() - 1)), generator, at::TensorOptions().dtype(at::kLong)));
        return at::cross_entropy_loss(logits.to(at::kFloat), labels.reshape({-1}));
      }
      if (at::isFloatingType(target.scalar_type()) || target.numel() != logits.size(0)) {
        throw InputError(label + ": cross-entropy of logits " + shape_text(t) + " needs integer labels of " +
                         std::to_string(logits.size(0)) + " values; the data's target is " +
                         std::string(c10::toString(target.scalar_type())) + shape_text(target));
      }
      const at::Tensor labels = target.reshape({-1}).to(at::kLong);
      const auto [low, high] = at::aminmax(labels);
      if (low.item<int64_t>() < 0 || high.item<int64_t>() >= t.size(-1)) {
        throw InputError(label + ": the data's labels span [" + std::to_string(low.item<int64_t>()) + ", " +
                         std::to_string(high.item<int64_t>()) + "], outside the " + std::to_string(t.size(-1)) + " classes");
      }
      return at::cross_entropy_loss(logits.to(at::kFloat), labels);
    }
    case LossKind::mse: {
      if (!target.defined()) {
        return at::mse_loss(t.to(at::kFloat),
                            drawn(at::randn(whole(t.sizes()), generator, at::TensorOptions().dtype(at::kFloat))));
      }
      if (!at::isFloatingType(target.scalar_type()) || target.sizes() != t.sizes()) {
        throw InputError(label + ": mse of an output " + shape_text(t) +
                         " needs a floating target of that shape; the data's is " +
                         std::string(c10::toString(target.scalar_type())) + shape_text(target));
      }
      return at::mse_loss(t.to(at::kFloat), target.to(at::kFloat));
    }
  }
  TORCH_CHECK(false, "no such loss");
}

void run_users_code(const std::string& label, const std::string& when, const std::function<void()>& work,
                    const std::function<bool(const std::exception&)>& passes) {
  try {
    work();
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {  // c10::Error, or the interpreter's std::runtime_error
    if (passes(e)) throw;
    const auto* error = dynamic_cast<const c10::Error*>(&e);
    const std::string what = error ? error->what_without_backtrace() : e.what();
    std::string last;
    size_t start = 0;
    while (start < what.size()) {
      const size_t end = std::min(what.find('\n', start), what.size());
      const std::string line = what.substr(start, end - start);
      if (line.find_first_not_of(" \t") != std::string::npos) last = line.substr(line.find_first_not_of(" \t"));
      start = end + 1;
    }
    throw InputError(label + ": running it " + when + " failed: " + last);
  }
}

const char* to_string(LossKind kind) {
  switch (kind) {
    case LossKind::output: return "output";
    case LossKind::cross_entropy: return "cross-entropy";
    case LossKind::mse: return "mse";
  }
  return "?";
}

LossKind parse_loss_kind(const std::string& text, const std::string& where) {
  for (const LossKind kind : {LossKind::output, LossKind::cross_entropy, LossKind::mse}) {
    if (text == to_string(kind)) return kind;
  }
  throw InputError(where + ": unknown loss '" + text + "' (output, cross-entropy, mse)");
}

}  // namespace papaya::executor::torchscript
