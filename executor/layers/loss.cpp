#include "executor/layers/loss.h"

#include <algorithm>
#include <functional>

#include "executor/storage/saved.h"

namespace papaya::executor {

// The MOM-aware losses: cross-entropy, and the LM head, whose
// log-probabilities can be recomputed chunk by chunk in backward instead of
// being stored.
namespace moms {
namespace {

using model::Form;
using torch::autograd::Function;

constexpr int64_t mean = at::Reduction::Mean;

// d loss / d logits from the fp32 log-probabilities, in `dtype`. The
// log-probabilities' gradient goes before the cast, as autograd frees it on
// the native path.
at::Tensor logits_grad(const at::Tensor& grad, const at::Tensor& logprobs, const at::Tensor& target,
                       const at::Tensor& total_weight, at::ScalarType dtype) {
  at::Tensor g = at::nll_loss_backward(grad, logprobs, target, {}, mean, ignored_target, total_weight);
  const at::Tensor logits = at::_log_softmax_backward_data(g, logprobs, -1, at::kFloat);
  g.reset();
  return logits.to(dtype);
}

// The LM head's logits in fp32, soft-capped where `softcap` > 0:
// cap·tanh(z / cap) (Gemma 2's final logits).
at::Tensor capped_logits(const at::Tensor& logits, double softcap) {
  const at::Tensor z = logits.to(at::kFloat);
  return softcap > 0 ? z.div(softcap).tanh_().mul_(softcap) : z;
}

// A gradient with respect to capped logits `capped`, taken back through the
// cap in place: times 1 - tanh^2, from the capped values themselves.
at::Tensor through_cap(at::Tensor grad, const at::Tensor& capped, double softcap) {
  at::Tensor slope = capped.div(softcap);
  return grad.mul_(slope.square_().neg_().add_(1));
}

struct CrossEntropyFunction : Function<CrossEntropyFunction> {
  static at::Tensor forward(AutogradContext* ctx, const CrossEntropy* layer, const at::Tensor& logits, const at::Tensor& target) {
    const at::Tensor logprobs = at::log_softmax(logits.to(at::kFloat), -1);
    auto [loss, total_weight] = at::nll_loss_forward(logprobs, target, {}, mean, ignored_target);
    stash(ctx, {store_slot(*layer, 0, logprobs)});
    ctx->save_for_backward({target, total_weight});
    ctx->saved_data["dtype"] = logits.scalar_type();
    return loss;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const Unstashed saved = unstash(ctx);
    const auto kept = ctx->get_saved_variables();
    const at::ScalarType dtype = ctx->saved_data["dtype"].toScalarType();
    ctx->saved_data.erase("dtype");
    const auto gradients = [&](const std::vector<at::Tensor>& s) -> variable_list {
      return {logits_grad(grad[0], s[0], kept[0], kept[1], dtype)};
    };
    const variable_list out = gradients(saved.tensors);
    saved.estimate_sensitivity(gradients, out);
    return {at::Tensor(), out[0], at::Tensor()};
  }
};

// The targets a loss counts: each row's target (0 where it is left out: a
// row to gather from), whether it counts, and how many do. Only a head that
// leaves rows out (a multi-token prediction module's last positions:
// ignored_target) makes the mask; the others count every row.
struct Counted {
  at::Tensor picked, rows, count;  // rows undefined: every row counts
};
Counted counted_targets(const at::Tensor& targets, bool leaves_rows_out) {
  if (!leaves_rows_out) return {targets, {}, at::scalar_tensor(targets.size(0), targets.options())};
  const at::Tensor rows = targets.ne(ignored_target);
  return {targets.masked_fill(rows.logical_not(), 0), rows, rows.sum()};
}

// The LM head's gradients with the log-probabilities recomputed chunk by
// chunk: {d x rows, d weight (accumulated and returned in fp32; undefined
// for a frozen weight, which then takes no vocabulary-sized buffer)}.
variable_list recomputed_gradients(const at::Tensor& grad, const at::Tensor& rows, const at::Tensor& weight,
                                   const Counted& counted, bool weight_trained, double softcap) {
  at::Tensor grad_rows, grad_weight;
  const int64_t n = rows.size(0), step = model::lm_head_chunk_rows(weight.size(0));
  const at::Tensor per_token = grad.to(at::kFloat).div(counted.count).neg();  // d loss / d logprob of each target counted
  for (int64_t start = 0; start < n; start += step) {
    const int64_t count = std::min(step, n - start);
    const at::Tensor x = rows.narrow(0, start, count), target = counted.picked.narrow(0, start, count).unsqueeze(1);
    at::Tensor capped = capped_logits(at::linear(x, weight), softcap);
    at::Tensor logprobs = at::log_softmax(capped, -1);
    if (softcap <= 0) capped.reset();  // the logits: only a cap's slope reads them again
    const at::Tensor chunk_grad = counted.rows.defined()
                                      ? counted.rows.narrow(0, start, count).unsqueeze(1).to(at::kFloat).mul_(per_token)
                                      : per_token.expand({count, 1});
    at::Tensor g = at::zeros_like(logprobs).scatter_(1, target, chunk_grad);
    at::Tensor logits = at::_log_softmax_backward_data(g, logprobs, -1, at::kFloat);
    // The chunk's log-probabilities go before the cap's slope, the casts
    // below and the results are made: at no point more than keep's backward
    // holds.
    logprobs.reset();
    g.reset();
    if (softcap > 0) through_cap(logits, capped, softcap);
    capped.reset();
    if (!grad_rows.defined()) {
      grad_rows = at::empty_like(rows);
      if (weight_trained) grad_weight = at::zeros(weight.sizes(), weight.options().dtype(at::kFloat));
    }
    grad_rows.narrow(0, start, count).copy_(logits.to(rows.scalar_type()).mm(weight));
    if (weight_trained) grad_weight.addmm_(logits.t(), x.to(at::kFloat));  // in place: no vocabulary-sized temporary
  }
  return {grad_rows, grad_weight};
}

// A keep step's slots, reported as the native path reports them (a frozen
// head keeps the MOM-aware Function in every plan): nullptr where none is.
using SlotReport = std::function<void(const std::string& slot, const at::Tensor& tensor)>;

// With soft-capped logits the slot "logprobs" holds the capped logits in
// fp32 (the log-probabilities less each row's log-sum-exp: as many bytes),
// from which backward takes the log-probabilities and the cap's slope again.
struct LMHeadFunction : Function<LMHeadFunction> {
  static at::Tensor forward(AutogradContext* ctx, const LMHead* layer, const at::Tensor& x, const at::Tensor& weight,
                            const at::Tensor& target, const SlotReport* report) {
    const at::Tensor rows = x.reshape({-1, x.size(-1)}), targets = target.reshape({-1});
    const at::Tensor w = computed_as(weight, x);
    const double softcap = layer->softcap;
    ctx->saved_data["softcap"] = softcap;
    ctx->saved_data["leaves_rows_out"] = layer->lookahead > 0;
    if (model::recomputes(layer->store_spec(1).strategy.form)) {
      stash(ctx, {store_slot(*layer, 0, x)});
      ctx->save_for_backward({weight, targets});
      at::Tensor total = at::zeros({}, x.options().dtype(at::kFloat));
      const int64_t n = rows.size(0), step = model::lm_head_chunk_rows(weight.size(0));
      const Counted counted = counted_targets(targets, layer->lookahead > 0);
      for (int64_t start = 0; start < n; start += step) {
        const int64_t count = std::min(step, n - start);
        const at::Tensor logprobs = at::log_softmax(capped_logits(at::linear(rows.narrow(0, start, count), w), softcap), -1);
        at::Tensor picked = logprobs.gather(1, counted.picked.narrow(0, start, count).unsqueeze(1));
        if (counted.rows.defined()) picked.squeeze_(1).masked_fill_(counted.rows.narrow(0, start, count).logical_not(), 0);
        total.sub_(picked.sum());
      }
      return total.div_(counted.count);
    }
    at::Tensor capped = capped_logits(at::linear(x, w), softcap);
    at::Tensor logprobs = at::log_softmax(capped, -1);
    if (softcap <= 0) capped.reset();  // the logits: kept only where they are capped
    auto [loss, total_weight] = at::nll_loss_forward(logprobs.flatten(0, 1), targets, {}, mean, ignored_target);
    if (softcap > 0) logprobs = std::move(capped);
    stash(ctx, {store_slot(*layer, 0, x), store_slot(*layer, 1, logprobs)});
    if (report) {
      (*report)("input", x);
      (*report)("logprobs", logprobs);
    }
    ctx->save_for_backward({weight, targets, total_weight});
    return loss;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const Unstashed saved = unstash(ctx);
    const auto kept = ctx->get_saved_variables();
    const at::Tensor &weight = kept[0], &targets = kept[1];
    const at::Tensor w = computed_as(weight, saved.tensors[0]);
    const bool weight_trained = ctx->needs_input_grad(1);  // of x, weight, target
    const double softcap = ctx->saved_data["softcap"].toDouble();
    const auto gradients = [&](const std::vector<at::Tensor>& s) -> variable_list {
      const at::Tensor rows = s[0].reshape({-1, s[0].size(-1)});
      if (s.size() == 1) {
        const Counted counted = counted_targets(targets, ctx->saved_data["leaves_rows_out"].toBool());
        const variable_list g = recomputed_gradients(grad[0], rows, w, counted, weight_trained, softcap);
        return {g[0].view_as(s[0]), gradient_for(weight, g[1])};
      }
      at::Tensor g;
      if (softcap > 0) {
        const at::Tensor capped = s[1].flatten(0, 1);
        g = logits_grad(grad[0], at::log_softmax(capped, -1), targets, kept[2], at::kFloat);
        g = through_cap(std::move(g), capped, softcap).to(rows.scalar_type());
      } else {
        g = logits_grad(grad[0], s[1].flatten(0, 1), targets, kept[2], rows.scalar_type());
      }
      return {g.mm(w).view_as(s[0]), weight_trained ? gradient_for(weight, g.t().mm(rows)) : at::Tensor()};
    };
    const variable_list out = gradients(saved.tensors);
    saved.estimate_sensitivity(gradients, out);
    return {at::Tensor(), out[0], out[1], at::Tensor(), at::Tensor()};
  }
};

// A tensor-parallel LM head (Megatron's vocab-parallel head and
// cross-entropy; with the tokens split, it gathers them and stores its share
// of them): each rank's share of the vocabulary's logits, the softmax's
// maximum and sum and the targets' logits summed over the group. Stores its
// input and its share of the softmax as its slots say (the softmax where
// one process keeps the log-probabilities), or recomputes that share in
// backward, with the group's sums again; the logits' gradient is softmax -
// one-hot, over the rows.
struct VocabParallelLMHead : public Function<VocabParallelLMHead> {
  struct Targets {
    at::Tensor clamped, inside;  // each row's target within the share, and whether it is in it
  };
  static Targets targets_of(const at::Tensor& target, int64_t first_row, int64_t rows) {
    const at::Tensor local = target - first_row;
    return {local.clamp(0, rows - 1), local.ge(0).logical_and(local.lt(rows))};
  }
  // The input of every token: gathered where the group splits them, `x` is this rank's share.
  static at::Tensor tokens_of(TensorGroup& group, const at::Tensor& x) { return group.splits_sequence() ? group.gathered(x) : x; }
  // The share's softmax of `rows`' logits, and (with `loss`) the mean loss.
  static at::Tensor softmax(const at::Tensor& rows, const at::Tensor& w, TensorGroup& group, const Targets& t, at::Tensor* loss) {
    const at::Tensor logits = at::linear(rows, w).to(at::kFloat);
    const at::Tensor top = group.max(std::get<0>(logits.max(-1)));
    at::Tensor out = (logits - top.unsqueeze(-1)).exp_();
    const at::Tensor total = group.total(out.sum(-1));
    if (loss) {
      const at::Tensor picked =
          group.total(logits.gather(1, t.clamped.unsqueeze(1)).squeeze(1).masked_fill(t.inside.logical_not(), 0));
      *loss = (total.log() + top - picked).mean();
    }
    return out.div_(total.unsqueeze(-1));
  }

  static at::Tensor forward(AutogradContext* ctx, const LMHead* layer, const at::Tensor& x, const at::Tensor& weight,
                            const at::Tensor& target, int64_t group_handle, int64_t first_row) {
    TensorGroup& group = *reinterpret_cast<TensorGroup*>(group_handle);
    const at::Tensor rows = tokens_of(group, x).reshape({-1, x.size(-1)});
    const Targets t = targets_of(target.reshape({-1}), first_row, weight.size(0));
    at::Tensor loss;
    const at::Tensor probabilities = softmax(rows, computed_as(weight, x), group, t, &loss);
    const bool recomputed = model::recomputes(layer->store_spec(1).strategy.form);
    stash(ctx, recomputed ? std::vector{store_slot(*layer, 0, x)}
                          : std::vector{store_slot(*layer, 0, x), store_slot(*layer, 1, probabilities)});
    ctx->save_for_backward({weight, t.clamped, t.inside});
    ctx->saved_data["group"] = group_handle;
    return loss;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const Unstashed saved = unstash(ctx);
    const auto kept = ctx->get_saved_variables();
    const at::Tensor& weight = kept[0];
    const Targets t{kept[1], kept[2]};
    TensorGroup& group = *reinterpret_cast<TensorGroup*>(ctx->saved_data["group"].toInt());
    const at::Tensor w = computed_as(weight, saved.tensors[0]);
    const bool weight_trained = ctx->needs_input_grad(1);  // of x, weight, target, group, first row
    // Every rank estimates at the same steps: their gathers meet.
    const auto gradients = [&](const std::vector<at::Tensor>& s) -> variable_list {
      const at::Tensor x = tokens_of(group, s[0]);
      const at::Tensor rows = x.reshape({-1, x.size(-1)});
      at::Tensor g = s.size() > 1 ? s[1].to(at::kFloat).clone() : softmax(rows, w, group, t, nullptr);
      g.scatter_add_(1, t.clamped.unsqueeze(1), t.inside.to(g.scalar_type()).neg().unsqueeze(1));
      g.mul_(grad[0].to(at::kFloat) / rows.size(0));
      g = g.to(rows.scalar_type());
      return {g.mm(w).view_as(x), weight_trained ? gradient_for(weight, g.t().mm(rows)) : at::Tensor()};
    };
    variable_list out = gradients(saved.tensors);
    saved.estimate_sensitivity(gradients, out);
    // With the tokens split, the input's gradient is this rank's share of the group's sum.
    at::Tensor dx = group.splits_sequence() ? group.scattered_sum(std::move(out[0])) : out[0];
    return {at::Tensor(), dx, out[1], at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

torch::Tensor cross_entropy(const CrossEntropy& layer, const torch::Tensor& logits, const torch::Tensor& target) {
  return CrossEntropyFunction::apply(&layer, logits, target);
}

torch::Tensor lm_head(const LMHead& layer, const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& target,
                      const SlotReport* report = nullptr) {
  return LMHeadFunction::apply(&layer, x, weight, target, report);
}

torch::Tensor vocab_parallel_lm_head(const LMHead& layer, const torch::Tensor& x, const torch::Tensor& weight,
                                     const torch::Tensor& target, TensorGroup& group, int64_t first_row) {
  return VocabParallelLMHead::apply(&layer, x, weight, target, reinterpret_cast<int64_t>(&group), first_row);
}

}  // namespace
}  // namespace moms

CrossEntropy::CrossEntropy() : Layer(LayerKind::cross_entropy, {{"logprobs", SlotKind::activation}}) {}

torch::Tensor CrossEntropy::forward(torch::Tensor logits, torch::Tensor target) {
  Scope scope(*this, {&logits});
  if (uses_moms()) return scope.finish(moms::cross_entropy(*this, logits, target));
  const torch::Tensor logprobs = torch::log_softmax(logits.to(torch::kFloat), -1);
  scope.saved("logprobs", logprobs);
  return scope.finish(torch::nll_loss(logprobs, target));
}

LMHead::LMHead(torch::Tensor tied_weight)
    : Layer(LayerKind::lm_head, {{"input", SlotKind::activation}, {"logprobs", SlotKind::activation}}),
      weight(std::move(tied_weight)) {}

LMHead::LMHead(int64_t vocab, int64_t dim)
    : Layer(LayerKind::lm_head, {{"input", SlotKind::activation}, {"logprobs", SlotKind::activation}}) {
  weight = register_parameter("weight", torch::randn({vocab, dim}) * 0.02);
}

void LMHead::split(const std::shared_ptr<TensorGroup>& group) {
  const int64_t rows = weight.size(0) / group->size();
  first_row_ = rows * group->rank();
  if (shared_parameters().empty()) {  // its own weight: a tied one is split with the embedding
    const torch::NoGradGuard no_grad;
    weight.set_data(weight.narrow(0, first_row_, rows).clone());
  }
  group_ = group;
}

std::vector<torch::Tensor> LMHead::shared_parameters() const {
  if (parameters(/*recurse=*/false).empty()) return {weight};  // tied
  return {};
}

torch::Tensor LMHead::forward(torch::Tensor x, torch::Tensor target) {
  Scope scope(*this, {&x});
  target = targets_ahead(target, lookahead);
  if (group_) {
    // With the tokens split, the head gathers them itself, storing its share.
    const torch::Tensor input = group_->splits_sequence() ? x : group_->enter(x);
    return scope.finish(moms::vocab_parallel_lm_head(*this, input, weight, target, *group_, first_row_));
  }
  if (uses_moms()) return scope.finish(moms::lm_head(*this, x, weight, target));
  if (softcap > 0 || frozen_weight_in_training()) {
    const moms::SlotReport report = [&scope](const std::string& slot, const at::Tensor& t) { scope.saved(slot, t); };
    return scope.finish(moms::lm_head(*this, x, weight, target, &report));
  }
  scope.saved("input", x);
  const torch::Tensor logits = torch::linear(x, cast(weight));
  const torch::Tensor logprobs = torch::log_softmax(logits.to(torch::kFloat), -1);
  scope.saved("logprobs", logprobs);
  return scope.finish(torch::nll_loss(logprobs.flatten(0, 1), target.flatten()));
}

bool LMHead::frozen_weight_in_training() const {
  return !weight.requires_grad() && torch::GradMode::is_enabled() && differentiated() && !NativePath::active();
}

}  // namespace papaya::executor
