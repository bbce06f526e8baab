#include "executor/distributed/tensor_parallel.h"

namespace papaya::executor {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class CollectivesGroup;
CollectivesGroup& group_of(AutogradContext* ctx) {
  return *reinterpret_cast<CollectivesGroup*>(ctx->saved_data["group"].toInt());
}

class CollectivesGroup : public TensorGroup {
 public:
  CollectivesGroup(Collectives& collectives, bool sequence_parallel)
      : collectives_(collectives), sequence_parallel_(sequence_parallel) {}
  int rank() const override { return collectives_.world().rank; }
  int size() const override { return collectives_.world().size; }
  bool splits_sequence() const override { return sequence_parallel_; }
  torch::Tensor enter(const torch::Tensor& x) override;
  torch::Tensor sum(const torch::Tensor& x) override;
  torch::Tensor total(const torch::Tensor& x) override {
    std::vector<torch::Tensor> sum{x.detach().contiguous().clone()};
    collectives_.allreduce_sum(sum);
    return sum[0];
  }
  torch::Tensor max(const torch::Tensor& x) override {
    std::vector<torch::Tensor> out{x.detach().contiguous().clone()};
    collectives_.allreduce_max(out);
    return out[0];
  }
  torch::Tensor scattered_sum(torch::Tensor whole) override {
    std::vector<torch::Tensor> sum{whole.contiguous()};
    collectives_.allreduce_sum(sum);
    const int64_t tokens = sum[0].size(1) / size();
    return sum[0].narrow(1, tokens * rank(), tokens).contiguous();
  }
  // Each rank adds its own share into zeros, which sum exactly.
  torch::Tensor gathered(const torch::Tensor& share) override {
    std::vector<int64_t> shape = share.sizes().vec();
    const int64_t tokens = shape[1];
    shape[1] *= size();
    std::vector<torch::Tensor> whole{torch::zeros(shape, share.options())};
    whole[0].narrow(1, tokens * rank(), tokens).copy_(share.detach());
    collectives_.allreduce_sum(whole);
    return whole[0];
  }

 private:
  int64_t handle() { return reinterpret_cast<int64_t>(this); }
  Collectives& collectives_;
  bool sequence_parallel_;
};

struct Enter : public torch::autograd::Function<Enter> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, int64_t group) {
    ctx->saved_data["group"] = group;
    CollectivesGroup& g = *reinterpret_cast<CollectivesGroup*>(group);
    return g.splits_sequence() ? g.gathered(x) : x.view_as(x);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    CollectivesGroup& g = group_of(ctx);
    return {g.splits_sequence() ? g.scattered_sum(grad[0].clone()) : g.total(grad[0]), torch::Tensor()};
  }
};

struct Sum : public torch::autograd::Function<Sum> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, int64_t group) {
    ctx->saved_data["group"] = group;
    CollectivesGroup& g = *reinterpret_cast<CollectivesGroup*>(group);
    return g.splits_sequence() ? g.scattered_sum(x.detach().clone()) : g.total(x);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    CollectivesGroup& g = group_of(ctx);
    return {g.splits_sequence() ? g.gathered(grad[0]) : grad[0], torch::Tensor()};
  }
};

torch::Tensor CollectivesGroup::enter(const torch::Tensor& x) { return Enter::apply(x, handle()); }
torch::Tensor CollectivesGroup::sum(const torch::Tensor& x) { return Sum::apply(x, handle()); }

}  // namespace

std::shared_ptr<TensorGroup> tensor_group(Collectives& collectives, bool sequence_parallel) {
  return std::make_shared<CollectivesGroup>(collectives, sequence_parallel);
}

void sum_replicated_gradients(const Network& network, TensorGroup& group) {
  if (!group.splits_sequence()) return;
  const torch::NoGradGuard no_grad;
  for (const auto& weight : network.replicated_weights()) {
    if (weight.grad().defined()) weight.mutable_grad().copy_(group.total(weight.grad()));
  }
}

}  // namespace papaya::executor
