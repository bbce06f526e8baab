#include "executor/distributed/sharded_data_parallel.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <functional>
#include <string>
#include <unordered_set>

#include "executor/distributed/parameter_storage.h"
#include "model/error.h"

namespace papaya::executor {
namespace {

const void* key(const torch::Tensor& t) { return t.unsafeGetTensorImpl(); }


// Runs `then` once autograd has put a parameter's gradient in its .grad:
// a post hook of the parameter's gradient accumulator.
class AfterAccumulation : public torch::autograd::FunctionPostHook {
 public:
  explicit AfterAccumulation(std::function<void()> then) : then_(std::move(then)) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list& /*inputs*/) override {
    then_();
    return outputs;
  }

 private:
  std::function<void()> then_;
};

}  // namespace

ShardedDataParallel::ShardedDataParallel(Collectives& collectives, Network& network, int zero_stage, int64_t bucket_bytes)
    : collectives_(collectives), network_(network), zero_stage_(zero_stage) {
  if (zero_stage != 2 && zero_stage != 3) {
    throw InputError("ZeRO stage " + std::to_string(zero_stage) + ": sharded data parallelism is stage 2 or 3");
  }
  const int rank = collectives.world().rank;
  const auto by_rank = shards(network.trainable_parameters(), collectives.world().size);
  for (size_t r = 0; r < by_rank.size(); ++r) {
    for (const auto& p : by_rank[r]) owner_[key(p)] = static_cast<int>(r);
  }
  owned_ = by_rank[static_cast<size_t>(rank)];
  const auto parameters = network.trainable_parameters();
  for (GradientBucket& layout : gradient_buckets(network.trainable_parameters(), bucket_bytes)) {
    buckets_.emplace_back();
    Bucket& bucket = buckets_.back();
    static_cast<GradientBucket&>(bucket) = std::move(layout);
    for (const auto& p : bucket.parameters) bucket.owners.push_back(owner_.at(key(p)));
  }
  const torch::NoGradGuard no_grad;
  for (Bucket& bucket : buckets_) {
    for (size_t i = 0; i < bucket.parameters.size(); ++i) {
      torch::Tensor p = bucket.parameters[i];
      // The owned gradients stay allocated all run, as one process's do: a rank's share of the static state.
      const bool mine = bucket.owners[i] == rank;
      bucket.owned_gradients.push_back(mine ? (p.grad().defined() ? p.grad() : torch::zeros_like(p)) : torch::Tensor());
      p.mutable_grad() = bucket.owned_gradients.back();
      auto accumulator = torch::autograd::impl::grad_accumulator(p);
      const uintptr_t hook =
          accumulator->add_post_hook(std::make_unique<AfterAccumulation>([this, &bucket, i] { gradient_arrived(bucket, i); }));
      hooks_.emplace_back(std::move(accumulator), hook);
    }
  }
  if (zero_stage == 3) {
    // Each layer's weights, its own and those it borrows (a tied head's);
    // one that is not its storage's alone stays whole on every rank.
    std::unordered_set<const void*> trained;
    for (const auto& p : parameters) trained.insert(key(p));
    for (const Layer* layer : network.layers()) {
      auto weights = layer->parameters();
      for (const auto& p : layer->shared_parameters()) weights.push_back(p);
      for (const auto& p : weights) {
        if (trained.count(key(p)) && owns_its_storage(p)) layer_weights_[layer].push_back(p);
      }
    }
    const Layer* later = nullptr;  // in forward order, the last layer with sharded weights seen so far
    for (auto it = network.layers().rbegin(); it != network.layers().rend(); ++it) {
      if (!layer_weights_.count(*it)) continue;
      if (later) next_in_backward_[later] = *it;
      later = *it;
    }
  }
}

ShardedDataParallel::~ShardedDataParallel() {
  for (auto& [accumulator, hook] : hooks_) accumulator->del_post_hook(hook);
  observing_.reset();
  const torch::NoGradGuard no_grad;
  for (const auto& [layer, weights] : layer_weights_) {
    for (const auto& p : weights) {
      if (storage_let_go(p)) give_storage_back(p);
    }
  }
}

bool ShardedDataParallel::mine(const torch::Tensor& p) const {
  const auto it = owner_.find(key(p));
  return it == owner_.end() || it->second == collectives_.world().rank;
}

void ShardedDataParallel::broadcast_parameters() {
  const torch::NoGradGuard no_grad;
  for (auto& p : network_.trainable_parameters()) {
    std::vector<torch::Tensor> value{p.detach()};
    collectives_.broadcast(value, 0);
  }
  if (zero_stage_ != 3) return;
  for (const auto& [layer, weights] : layer_weights_) {
    for (const auto& p : weights) {
      if (!mine(p)) let_go_of_storage(p);
    }
  }
}

void ShardedDataParallel::begin_step() {
  // Autograd puts each gradient in .grad, whence it goes in a bucket and is
  // let go, an owned one's too: its mean is written to the kept tensor.
  for (auto& p : network_.trainable_parameters()) p.mutable_grad() = torch::Tensor();
  if (zero_stage_ == 3) observing_ = std::make_unique<ObserverGuard>(static_cast<LayerObserver*>(this));
}

void ShardedDataParallel::gradient_arrived(Bucket& bucket, size_t index) {
  torch::Tensor& parameter = bucket.parameters[index];
  const torch::Tensor gradient = parameter.grad();
  if (!gradient.defined()) return;
  parameter.mutable_grad() = torch::Tensor();  // freed with `gradient`: one process holds its own in place of it
  if (bucket.sent) {  // a second gradient (a weight used inside and outside a recomputed segment): exchanged after backward
    late_.push_back({&bucket, index, gradient});
    return;
  }
  if (!bucket.flat.defined()) take_buffer(bucket);
  bucket.flat.narrow(0, bucket.offsets[index], gradient.numel()).add_(gradient.flatten());
  if (++bucket.arrived == static_cast<int>(bucket.parameters.size())) send(bucket);
}

void ShardedDataParallel::send(Bucket& bucket) {
  if (on_the_wire_) finish(*on_the_wire_);  // at most two buffers: this one, and the next filling
  if (!bucket.flat.defined()) take_buffer(bucket);
  for (size_t first = 0, end = 0; first < bucket.parameters.size(); first = end) {
    const int to = bucket.owners[first];
    for (end = first + 1; end < bucket.parameters.size() && bucket.owners[end] == to;) ++end;
    const int64_t run_end = end < bucket.parameters.size() ? bucket.offsets[end] : bucket.numel;
    std::vector<torch::Tensor> run{bucket.flat.narrow(0, bucket.offsets[first], run_end - bucket.offsets[first])};
    bucket.pending.push_back(collectives_.start_reduce_sum(run, to));
  }
  bucket.sent = true;
  on_the_wire_ = &bucket;
}

void ShardedDataParallel::finish(Bucket& bucket) {
  for (const auto& pending : bucket.pending) pending.wait();
  bucket.pending.clear();
  const double ranks = collectives_.world().size;
  for (size_t i = 0; i < bucket.parameters.size(); ++i) {
    torch::Tensor& mean = bucket.owned_gradients[i];
    if (mean.defined()) mean.copy_(bucket.flat.narrow(0, bucket.offsets[i], mean.numel()).view_as(mean)).div_(ranks);
  }
  bucket.flat = torch::Tensor();
  buffer_taken_[static_cast<size_t>(bucket.buffer)] = false;
  if (on_the_wire_ == &bucket) on_the_wire_ = nullptr;
}

void ShardedDataParallel::take_buffer(Bucket& bucket) {
  auto free = std::find(buffer_taken_.begin(), buffer_taken_.end(), false);
  if (free == buffer_taken_.end() && buffers_.size() >= 2 && on_the_wire_) {
    finish(*on_the_wire_);
    free = std::find(buffer_taken_.begin(), buffer_taken_.end(), false);
  }
  if (free == buffer_taken_.end()) {
    int64_t longest = 0;
    for (const Bucket& b : buckets_) longest = std::max(longest, b.numel);
    buffers_.push_back(torch::empty({longest}, bucket.parameters.front().options()));
    buffer_taken_.push_back(false);
    free = buffer_taken_.end() - 1;
  }
  *free = true;
  bucket.buffer = static_cast<int>(free - buffer_taken_.begin());
  bucket.flat = buffers_[static_cast<size_t>(bucket.buffer)].narrow(0, 0, bucket.numel).zero_();
}

void ShardedDataParallel::reduce_gradients() {
  const torch::NoGradGuard no_grad;
  for (const Layer* layer : held_for_backward_) release(*layer);
  held_for_backward_.clear();
  observing_.reset();
  for (Bucket& bucket : buckets_) {
    if (!bucket.sent) send(bucket);  // an unused weight's gradient is 0
  }
  if (on_the_wire_) finish(*on_the_wire_);
  const double ranks = collectives_.world().size;
  for (auto& [bucket, index, gradient] : late_) {
    std::vector<torch::Tensor> sum{gradient};
    const int to = bucket->owners[index];
    collectives_.start_reduce_sum(sum, to).wait();
    torch::Tensor& mean = bucket->owned_gradients[index];
    if (mean.defined()) mean.add_(gradient.view_as(mean), 1 / ranks);
  }
  late_.clear();
  for (Bucket& bucket : buckets_) {
    bucket.arrived = 0;
    bucket.sent = false;
    for (size_t i = 0; i < bucket.parameters.size(); ++i) bucket.parameters[i].mutable_grad() = bucket.owned_gradients[i];
  }
}

void ShardedDataParallel::gather_shards() {
  if (zero_stage_ == 3) return;
  const torch::NoGradGuard no_grad;
  for (auto& p : network_.trainable_parameters()) {
    std::vector<torch::Tensor> value{p.detach()};
    collectives_.broadcast(value, owner_.at(key(p)));
  }
}

void ShardedDataParallel::forward_begin(const Layer& layer, std::vector<torch::Tensor*>& /*inputs*/) { acquire(layer); }

void ShardedDataParallel::forward_end(const Layer& layer, torch::Tensor& output) {
  release(layer);
  if (!torch::GradMode::is_enabled() || !output.requires_grad() || !layer_weights_.count(&layer)) return;
  // Runs as autograd reaches the layer's output, before its backward.
  output.register_hook([this, &layer](const torch::Tensor&) { backward_begin(layer); });
}

void ShardedDataParallel::backward_begin(const Layer& layer) {
  // Held from here to the next layer's backward: this layer's weights and,
  // gathered ahead of use, the next one's; the rest are done with.
  const auto next = next_in_backward_.find(&layer);
  std::vector<const Layer*> held{&layer};
  if (next != next_in_backward_.end()) held.push_back(next->second);
  const auto in = [](const std::vector<const Layer*>& list, const Layer* l) {
    return std::find(list.begin(), list.end(), l) != list.end();
  };
  for (const Layer* done : held_for_backward_) {
    if (!in(held, done)) release(*done);
  }
  for (const Layer* wanted : held) {
    if (!in(held_for_backward_, wanted)) acquire(*wanted);
  }
  held_for_backward_ = held;
}

void ShardedDataParallel::acquire(const Layer& layer) {
  const auto it = layer_weights_.find(&layer);
  if (it == layer_weights_.end()) return;
  const torch::NoGradGuard no_grad;
  for (const auto& p : it->second) {
    if (gathered_[key(p)]++ > 0) continue;
    // Every rank takes part, in the same order: the owner sends.
    if (!mine(p)) give_storage_back(p);
    std::vector<torch::Tensor> value{p.detach()};
    collectives_.broadcast(value, owner_.at(key(p)));
  }
}

void ShardedDataParallel::release(const Layer& layer) {
  const auto it = layer_weights_.find(&layer);
  if (it == layer_weights_.end()) return;
  for (const auto& p : it->second) {
    if (--gathered_[key(p)] == 0 && !mine(p)) let_go_of_storage(p);
  }
}

}  // namespace papaya::executor
