#include "executor/distributed/pipeline_parallel.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <unordered_set>

#include "executor/differentiate.h"
#include "executor/distributed/parameter_storage.h"
#include "model/error.h"
#include "model/network_layout.h"

namespace papaya::executor {
namespace {

// Whether `layer` belongs to stage `span`: its block's, or, outside the
// blocks, the first stage's before them and the last's after.
bool on_stage(const Layer& layer, bool before_blocks, const model::StageSpan& span) {
  const int block = model::block_of_path(layer.path());
  if (block >= 0) return block >= span.first_block && block < span.end_block;
  return before_blocks ? span.first : span.last;
}

// Each layer of `network` with whether it is on the stage.
std::vector<std::pair<Layer*, bool>> layers_by_stage(const Network& network, const model::StageSpan& span) {
  std::vector<std::pair<Layer*, bool>> out;
  bool before_blocks = true;
  for (Layer* layer : network.layers()) {
    if (model::block_of_path(layer->path()) >= 0) before_blocks = false;
    out.emplace_back(layer, on_stage(*layer, before_blocks, span));
  }
  return out;
}

const void* key(const torch::Tensor& t) { return t.unsafeGetTensorImpl(); }

// The activation's shape goes ahead of it: up to 8 dimensions, then their count.
constexpr int64_t shape_slots = 9;

}  // namespace

model::StageSpan stage_span(const Network& network, int stage, int stages) {
  const std::string& name = network.config().name;
  if (network.block_count() == 0) throw InputError(name + ": pipeline stages split a chain of blocks; it has none");
  for (const Layer* layer : network.layers()) {
    if (!layer->shared_parameters().empty()) {
      throw InputError(name + ": layer " + layer->path() +
                       " computes with another layer's weights (a tied LM head, a multi-token prediction module's "
                       "embedding or head), which would be on two pipeline stages");
    }
  }
  const auto spans = model::pipeline_stages(network.block_count(), stages);
  return spans.at(static_cast<size_t>(stage));
}

std::vector<torch::Tensor> stage_parameters(const Network& network, int stage, int stages) {
  std::unordered_set<const void*> mine;
  for (const auto& [layer, on] : layers_by_stage(network, stage_span(network, stage, stages))) {
    if (!on) continue;
    for (const auto& p : layer->parameters()) mine.insert(key(p));
  }
  std::vector<torch::Tensor> out;
  for (const auto& p : network.trainable_parameters()) {
    if (mine.count(key(p))) out.push_back(p);
  }
  return out;
}

PipelineParallel::PipelineParallel(Collectives& collectives, Network& network, int micro_batches)
    : collectives_(collectives),
      network_(network),
      micro_batches_(micro_batches),
      span_(stage_span(network, collectives.world().rank, collectives.world().size)) {
  const int stages = collectives.world().size;
  // A checked layout (model::check_layout) has at least one a stage.
  if (micro_batches < stages) throw std::logic_error("PipelineParallel: fewer micro-batches than stages");
  const torch::NoGradGuard no_grad;
  for (const auto& [layer, on] : layers_by_stage(network, span_)) {
    if (on) continue;
    for (auto& p : layer->parameters()) {
      p.mutable_grad() = torch::Tensor();
      if (owns_its_storage(p)) let_go_of_storage(p);
    }
  }
}

void PipelineParallel::send(const torch::Tensor& tensor, int to, int tag) {
  std::vector<torch::Tensor> wire{tensor.contiguous()};
  sends_.push_back({tag, wire[0], collectives_.start_send(wire, to, tag)});
}

void PipelineParallel::finish_sends(int first_tag, int end_tag) {
  std::vector<Send> left;
  for (Send& send : sends_) {
    if (send.tag >= first_tag && send.tag < end_tag) {
      send.pending.wait();
    } else {
      left.push_back(std::move(send));
    }
  }
  sends_ = std::move(left);
}

torch::Tensor PipelineParallel::receive_activation(int index) {
  const int from = collectives_.world().rank - 1;
  std::vector<torch::Tensor> header{torch::zeros({shape_slots}, torch::kLong)};
  collectives_.receive(header, from, 3 * index);
  const int64_t dims = header[0][shape_slots - 1].item<int64_t>();
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < dims; ++d) shape.push_back(header[0][d].item<int64_t>());
  std::vector<torch::Tensor> activation{
      torch::empty(shape, torch::dtype(network_.compute_dtype()).device(collectives_.device()))};
  collectives_.receive(activation, from, 3 * index + 1);
  return activation[0].requires_grad_(true);
}

PipelineParallel::InFlight PipelineParallel::forward(const Batch& micro_batch, int index) {
  InFlight f;
  torch::Tensor x;
  if (span_.first) {
    x = network_.before_blocks(micro_batch);
  } else {
    f.input = receive_activation(index);
    x = f.input;
  }
  for (int b = span_.first_block; b < span_.end_block; ++b) x = network_.run_block(b, std::move(x));
  if (span_.last) {
    f.loss = network_.after_blocks(std::move(x), micro_batch);
    return f;
  }
  const int to = collectives_.world().rank + 1;
  torch::Tensor header = torch::zeros({shape_slots}, torch::kLong);
  for (int64_t d = 0; d < x.dim(); ++d) header[d] = x.size(d);
  header[shape_slots - 1] = x.dim();
  send(header, to, 3 * index);
  send(x.detach(), to, 3 * index + 1);
  // The output's values go once the next stage has them (it receives them
  // in its forward, ahead of anything it asks of this stage).
  finish_sends(3 * index, 3 * index + 2);
  f.output_graph = graph_of(x);
  f.output_like = torch::empty({0}, x.options());
  f.output_shape = x.sizes().vec();
  return f;
}

double PipelineParallel::backward(InFlight& f, int index) {
  finish_sends(3 * index - 1, 3 * index);  // the gradient handed back for the micro-batch before
  double loss = 0;
  if (span_.last) {
    loss = f.loss.item<double>();
    (f.loss / micro_batches_).backward();
  } else {
    std::vector<torch::Tensor> gradient{f.output_like.new_empty(f.output_shape)};
    collectives_.receive(gradient, collectives_.world().rank + 1, 3 * index + 2);
    if (f.output_graph.function) differentiate(f.output_graph, gradient[0]);
  }
  if (!span_.first) send(f.input.grad(), collectives_.world().rank - 1, 3 * index + 2);
  if (after_backward_) after_backward_();
  f = InFlight();
  return loss;
}

double PipelineParallel::forward_backward(const Batch& batch) {
  const int64_t rows = batch.input.size(0);
  if (rows % micro_batches_ != 0) {
    throw InputError("a batch of " + std::to_string(rows) + " in " + std::to_string(micro_batches_) +
                     " micro-batches: the batch is a multiple of them");
  }
  const int64_t each = rows / micro_batches_;
  const auto micro_batch = [&](int i) {
    const auto slice = [&](const torch::Tensor& t) { return t.defined() ? t.narrow(0, i * each, each) : t; };
    Batch b{slice(batch.input), slice(batch.target), {}, {}};
    for (const auto& argument : batch.arguments) b.arguments.push_back(slice(argument));
    b.rows = {batch.rows.first + i * each, batch.rows.of > 0 ? batch.rows.of : rows};
    return b;
  };
  const int stage = collectives_.world().rank, stages = collectives_.world().size;
  const int ahead = std::min(stages - stage - 1, micro_batches_);
  std::vector<InFlight> in_flight(static_cast<size_t>(micro_batches_));
  double loss = 0;
  int forwards = 0, backwards = 0;
  for (; forwards < ahead; ++forwards) in_flight[static_cast<size_t>(forwards)] = forward(micro_batch(forwards), forwards);
  for (; forwards < micro_batches_; ++forwards, ++backwards) {
    in_flight[static_cast<size_t>(forwards)] = forward(micro_batch(forwards), forwards);
    loss += backward(in_flight[static_cast<size_t>(backwards)], backwards);
  }
  for (; backwards < micro_batches_; ++backwards) loss += backward(in_flight[static_cast<size_t>(backwards)], backwards);
  finish_sends(0, 3 * micro_batches_);
  // The loss is the last stage's: every stage reports it.
  std::vector<torch::Tensor> total{torch::tensor({loss}, torch::dtype(torch::kDouble).device(collectives_.device()))};
  collectives_.allreduce_sum(total);
  return total[0].item<double>() / micro_batches_;
}

}  // namespace papaya::executor
