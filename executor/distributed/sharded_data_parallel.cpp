#include "executor/distributed/sharded_data_parallel.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>

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

// A span of `parameter`'s elements, flat: its memory, as a tensor apart
// from autograd's version counting (filling a ZeRO-3 weight for backward is
// no change to what autograd saved).
torch::Tensor span_of(const torch::Tensor& parameter, const ShardSpan& span) {
  char* first = static_cast<char*>(parameter.data_ptr()) + span.begin * static_cast<int64_t>(parameter.element_size());
  return torch::from_blob(first, {span.numel}, parameter.options().requires_grad(false));
}

}  // namespace

ShardedDataParallel::ShardedDataParallel(Collectives& collectives, Network& network, const std::vector<torch::Tensor>& parameters,
                                         const std::vector<torch::Tensor>& shard, int zero_stage, int64_t bucket_bytes)
    : collectives_(collectives), parameters_(parameters), zero_stage_(zero_stage) {
  if (zero_stage != 2 && zero_stage != 3) {
    throw InputError("ZeRO stage " + std::to_string(zero_stage) + ": sharded data parallelism is stage 2 or 3");
  }
  const int rank = collectives.world().rank;
  const std::vector<ShardSpan> spans = shard_spans(parameters, collectives.world().size);
  size_t next_piece = 0;
  for (const ShardSpan& span : spans) {
    Spans& of = spans_[key(parameters[span.parameter])];
    of.spans.push_back(span);
    of.mine.push_back(span.owner == rank ? shard.at(next_piece++) : torch::Tensor());
    if (of.mine.back().defined()) shard_gradients_.push_back(of.mine.back().grad());
  }
  if (next_piece != shard.size()) throw std::logic_error("ShardedDataParallel: the shard is not this rank's");
  for (GradientBucket& layout : gradient_buckets(parameters, bucket_bytes)) {
    buckets_.emplace_back();
    Bucket& bucket = buckets_.back();
    static_cast<GradientBucket&>(bucket) = std::move(layout);
    bucket.runs = bucket_runs(bucket, parameters, spans);
    for (const BucketRun& run : bucket.runs) {
      if (run.owner != rank) continue;
      for (const auto& [index, span] : run.spans) {
        const Spans& of = spans_.at(key(bucket.parameters[index]));
        const int64_t begin = span.begin;
        const auto at = std::find_if(of.spans.begin(), of.spans.end(), [begin](const ShardSpan& s) { return s.begin == begin; });
        bucket.owned.push_back({bucket.offsets[index] + begin, of.mine.at(static_cast<size_t>(at - of.spans.begin())).grad()});
      }
    }
  }
  const torch::NoGradGuard no_grad;
  for (Bucket& bucket : buckets_) {
    for (size_t i = 0; i < bucket.parameters.size(); ++i) {
      torch::Tensor p = bucket.parameters[i];
      p.mutable_grad() = torch::Tensor();  // the shard's own gradients hold the means
      auto accumulator = torch::autograd::impl::grad_accumulator(p);
      const uintptr_t hook =
          accumulator->add_post_hook(std::make_unique<AfterAccumulation>([this, &bucket, i] { gradient_arrived(bucket, i); }));
      hooks_.emplace_back(std::move(accumulator), hook);
    }
  }
  if (zero_stage == 3) {
    // Each layer's weights, its own and those it borrows (a tied head's);
    // one that is not its storage's alone stays whole on every rank.
    for (const auto& p : parameters) {
      if (owns_its_storage(p)) let_go_.insert(key(p));
    }
    std::unordered_set<const void*> in_a_layer;
    for (const Layer* layer : network.layers()) {
      auto weights = layer->parameters();
      for (const auto& p : layer->shared_parameters()) weights.push_back(p);
      for (const auto& p : weights) {
        if (!let_go_.count(key(p))) continue;
        layer_weights_[layer].push_back(p);
        layers_of_[key(p)].push_back(layer);
        in_a_layer.insert(key(p));
      }
    }
    if (in_a_layer.size() != let_go_.size()) throw std::logic_error("ShardedDataParallel: a trained weight is in no layer");
    // A layer's weights are gathered again for its backward: it holds no
    // half-type copy of them in between (as FSDP frees the unsharded ones).
    for (Layer* layer : network.layers()) {
      if (layer_weights_.count(layer)) layer->set_holds_parameter_copies(false);
    }
    const Layer* later = nullptr;  // in forward order, the last layer with sharded weights seen so far
    for (auto it = network.layers().rbegin(); it != network.layers().rend(); ++it) {
      if (!layer_weights_.count(*it)) continue;
      if (later) next_in_backward_[later] = *it;
      later = *it;
    }
    for (const auto& p : parameters) {
      for (const auto& piece : spans_.at(key(p)).mine) {
        if (piece.defined() && let_go_.count(key(p)) && piece.storage().is_alias_of(p.storage())) {
          throw std::logic_error("ShardedDataParallel: a ZeRO-3 shard shares its weight's storage");
        }
      }
    }
  }
}

ShardedDataParallel::~ShardedDataParallel() {
  for (auto& [accumulator, hook] : hooks_) accumulator->del_post_hook(hook);
  observing_.reset();
  const torch::NoGradGuard no_grad;
  for (const auto& p : parameters_) {
    if (storage_let_go(p)) give_storage_back(p);
  }
}

void ShardedDataParallel::broadcast_parameters() {
  const torch::NoGradGuard no_grad;
  for (auto& p : parameters_) {
    std::vector<torch::Tensor> value{p.detach()};
    collectives_.broadcast(value, 0);
    if (!let_go_.count(key(p))) continue;
    // A ZeRO-3 shard holds its values apart; the weight's go.
    const Spans& of = spans_.at(key(p));
    for (size_t s = 0; s < of.spans.size(); ++s) {
      if (of.mine[s].defined()) of.mine[s].copy_(span_of(p, of.spans[s]));
    }
    let_go_of_storage(p);
  }
}

void ShardedDataParallel::begin_step() {
  // Autograd puts each gradient in .grad, whence it goes in a bucket and is
  // let go; the means of the shard's spans are added to their own tensors.
  const torch::NoGradGuard no_grad;
  for (auto& p : parameters_) p.mutable_grad() = torch::Tensor();
  for (auto& gradient : shard_gradients_) gradient.zero_();
  micro_batches_reduced_ = false;
  if (zero_stage_ == 3) observing_ = std::make_unique<ObserverGuard>(static_cast<LayerObserver*>(this));
}

void ShardedDataParallel::gradient_arrived(Bucket& bucket, size_t index) {
  torch::Tensor& parameter = bucket.parameters[index];
  const torch::Tensor gradient = parameter.grad();
  if (!gradient.defined()) return;
  const auto layers = layers_of_.find(key(parameter));
  if (layers != layers_of_.end()) {
    for (const Layer* layer : layers->second) weight_gradient_made(*layer);
  }
  parameter.mutable_grad() = torch::Tensor();  // freed with `gradient`: one process holds its own in place of it
  if (bucket.sent) {  // a second gradient (a weight used inside and outside a recomputed segment): exchanged after backward
    late_.push_back({parameter, gradient});
    return;
  }
  if (!bucket.flat.defined()) take_buffer(bucket);
  bucket.flat.narrow(0, bucket.offsets[index], gradient.numel()).add_(gradient.flatten());
  if (++bucket.arrived == static_cast<int>(bucket.parameters.size())) send(bucket);
}

void ShardedDataParallel::send(Bucket& bucket) {
  if (on_the_wire_) finish(*on_the_wire_);  // at most two buffers: this one, and the next filling
  if (!bucket.flat.defined()) take_buffer(bucket);
  for (const BucketRun& run : bucket.runs) {
    std::vector<torch::Tensor> wire{bucket.flat.narrow(0, run.offset, run.numel)};
    bucket.pending.push_back(collectives_.start_reduce_sum(wire, run.owner));
  }
  bucket.sent = true;
  on_the_wire_ = &bucket;
}

void ShardedDataParallel::finish(Bucket& bucket) {
  for (const auto& pending : bucket.pending) pending.wait();
  bucket.pending.clear();
  const double ranks = collectives_.world().size;
  for (Owned& owned : bucket.owned) owned.gradient.add_(bucket.flat.narrow(0, owned.offset, owned.gradient.numel()), 1 / ranks);
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

void ShardedDataParallel::reduce_micro_batch() {
  const torch::NoGradGuard no_grad;
  micro_batches_reduced_ = true;
  for (Bucket& bucket : buckets_) {
    if (!bucket.sent) send(bucket);  // an unused weight's gradient is 0
  }
  if (on_the_wire_) finish(*on_the_wire_);
  const double ranks = collectives_.world().size;
  for (auto& [parameter, gradient] : late_) {
    const Spans& of = spans_.at(key(parameter));
    for (size_t s = 0; s < of.spans.size(); ++s) {
      std::vector<torch::Tensor> sum{gradient.reshape({-1}).narrow(0, of.spans[s].begin, of.spans[s].numel).clone()};
      collectives_.start_reduce_sum(sum, of.spans[s].owner).wait();
      if (of.mine[s].defined()) of.mine[s].mutable_grad().add_(sum[0], 1 / ranks);
    }
  }
  late_.clear();
  for (Bucket& bucket : buckets_) {
    bucket.arrived = 0;
    bucket.sent = false;
  }
}

void ShardedDataParallel::reduce_gradients() {
  // A pipeline stage reduced each micro-batch's as its backward ended.
  if (!micro_batches_reduced_) reduce_micro_batch();
  for (const Layer* layer : held_for_backward_) release(*layer);
  held_for_backward_.clear();
  observing_.reset();
}

void ShardedDataParallel::broadcast_spans(const torch::Tensor& parameter) {
  const Spans& of = spans_.at(key(parameter));
  for (size_t s = 0; s < of.spans.size(); ++s) {
    std::vector<torch::Tensor> wire{span_of(parameter, of.spans[s])};
    if (of.mine[s].defined() && !of.mine[s].storage().is_alias_of(parameter.storage())) wire[0].copy_(of.mine[s]);
    collectives_.broadcast(wire, of.spans[s].owner);
  }
}

void ShardedDataParallel::gather_shards() {
  const torch::NoGradGuard no_grad;
  for (const auto& p : parameters_) {
    if (!let_go_.count(key(p))) broadcast_spans(p);
  }
}

void ShardedDataParallel::with_whole_weights(const std::function<void()>& use) {
  std::vector<torch::Tensor> gathered;
  {
    const torch::NoGradGuard no_grad;
    for (const auto& p : parameters_) {
      if (!let_go_.count(key(p)) || gathered_[key(p)] > 0) continue;
      give_storage_back(p);
      broadcast_spans(p);
      gathered.push_back(p);
    }
  }
  const auto let_go = [&] {
    for (const auto& p : gathered) let_go_of_storage(p);
  };
  try {
    use();
  } catch (...) {
    let_go();
    throw;
  }
  let_go();
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
  waiting_[&layer] = static_cast<int>(layer_weights_.at(&layer).size());
}

void ShardedDataParallel::weight_gradient_made(const Layer& layer) {
  int& waiting = waiting_[&layer];
  if (waiting == 0 || --waiting > 0) return;
  // The layer's backward is done with its weights: they go, as FSDP's
  // post-backward reshards them, ahead of the next layer's backward.
  const auto held = std::find(held_for_backward_.begin(), held_for_backward_.end(), &layer);
  if (held == held_for_backward_.end()) return;
  held_for_backward_.erase(held);
  release(layer);
}

void ShardedDataParallel::acquire(const Layer& layer) {
  const auto it = layer_weights_.find(&layer);
  if (it == layer_weights_.end()) return;
  const torch::NoGradGuard no_grad;
  for (const auto& p : it->second) {
    if (gathered_[key(p)]++ > 0) continue;
    // Every rank takes part, in the same order: each span's owner sends.
    give_storage_back(p);
    broadcast_spans(p);
  }
}

void ShardedDataParallel::release(const Layer& layer) {
  const auto it = layer_weights_.find(&layer);
  if (it == layer_weights_.end()) return;
  for (const auto& p : it->second) {
    if (--gathered_[key(p)] == 0) let_go_of_storage(p);
  }
}

}  // namespace papaya::executor
