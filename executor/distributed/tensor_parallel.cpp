#include "executor/distributed/tensor_parallel.h"

namespace papaya::executor {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

Collectives& collectives_of(AutogradContext* ctx) {
  return *reinterpret_cast<Collectives*>(ctx->saved_data["collectives"].toInt());
}

// A copy of `t` summed over the group.
torch::Tensor summed(Collectives& collectives, const torch::Tensor& t) {
  std::vector<torch::Tensor> sum{t.contiguous().clone()};
  collectives.allreduce_sum(sum);
  return sum[0];
}

struct Enter : public torch::autograd::Function<Enter> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, int64_t collectives) {
    ctx->saved_data["collectives"] = collectives;
    return x.view_as(x);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    return {summed(collectives_of(ctx), grad[0]), torch::Tensor()};
  }
};

struct Sum : public torch::autograd::Function<Sum> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, int64_t collectives) {
    ctx->saved_data["collectives"] = collectives;
    return summed(*reinterpret_cast<Collectives*>(collectives), x);
  }
  static variable_list backward(AutogradContext*, variable_list grad) { return {grad[0], torch::Tensor()}; }
};

class CollectivesGroup : public TensorGroup {
 public:
  explicit CollectivesGroup(Collectives& collectives) : collectives_(collectives) {}
  int rank() const override { return collectives_.world().rank; }
  int size() const override { return collectives_.world().size; }
  torch::Tensor enter(const torch::Tensor& x) override { return Enter::apply(x, handle()); }
  torch::Tensor sum(const torch::Tensor& x) override { return Sum::apply(x, handle()); }
  torch::Tensor max(const torch::Tensor& x) override {
    std::vector<torch::Tensor> out{x.detach().contiguous().clone()};
    collectives_.allreduce_max(out);
    return out[0];
  }

 private:
  int64_t handle() const { return reinterpret_cast<int64_t>(&collectives_); }
  Collectives& collectives_;
};

}  // namespace

std::shared_ptr<TensorGroup> tensor_group(Collectives& collectives) { return std::make_shared<CollectivesGroup>(collectives); }

}  // namespace papaya::executor
