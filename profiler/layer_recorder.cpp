#include "profiler/layer_recorder.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>

#include <algorithm>
#include <functional>
#include <map>
#include <utility>

#include "profiler/out_of_memory.h"

namespace papaya::profiler {
namespace {

// The identity node of a marker: its backward calls `reached`, then passes
// the gradient on.
struct MarkerBackward : torch::autograd::Node {
  explicit MarkerBackward(std::function<void()> reached) : reached(std::move(reached)) {}
  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    reached();
    return std::move(grads);
  }
  std::string name() const override { return "MarkerBackward"; }
  std::function<void()> reached;
};

// `t` again (its storage and its version counter) behind an identity node of
// its own, whose backward calls `reached`. Not a view: an in-place op on a
// view (an imported network's ReLU(inplace=True), or `out += identity` after
// a layer) moves the gradient's path onto the view's base, past the view's
// node, where it leaves a plain tensor's node in place.
torch::Tensor marked(const torch::Tensor& t, std::function<void()> reached) {
  const std::shared_ptr<MarkerBackward> node(new MarkerBackward(std::move(reached)), torch::autograd::deleteNode);
  node->set_next_edges(torch::autograd::collect_next_edges(t));
  torch::Tensor alias = t.detach();
  torch::autograd::set_history(alias, node);
  return alias;
}

}  // namespace

// The hooks run on the autograd engine's thread while the thread that called
// backward waits for it, so the state they touch is never shared at once.
LayerRecorder::LayerRecorder(const executor::Network& network, LayerTimer& timer, executor::MemoryTracker& memory,
                             int64_t memory_limit)
    : timer_(timer), memory_(memory), memory_limit_(memory_limit) {
  const auto& layers = network.layers();
  for (size_t i = 0; i < layers.size(); ++i) index_[layers[i]] = static_cast<int>(i);
  bytes_.resize(layers.size());
  pending_inputs_.resize(layers.size());
  backward_open_.resize(layers.size());
}

void LayerRecorder::start_step() {
  std::fill(bytes_.begin(), bytes_.end(), model::LayerMeasurement{});
  std::fill(pending_inputs_.begin(), pending_inputs_.end(), 0);
  std::fill(backward_open_.begin(), backward_open_.end(), false);
  open_without_inputs_.clear();
  memory_.reset_peak();
  peak_ = reserved_peak_ = 0;
  open_layers_ = 0;
  in_gap_ = true;  // what comes before the first layer is the first one's gap
}

void LayerRecorder::restart_peak() {
  step_peak();
  step_reserved_peak();
  memory_.reset_peak();
}

int64_t LayerRecorder::step_peak() { return peak_ = std::max(peak_, memory_.peak()); }

int64_t LayerRecorder::step_reserved_peak() { return reserved_peak_ = std::max(reserved_peak_, memory_.reserved_peak()); }

void LayerRecorder::forward_begin(const executor::Layer& layer, std::vector<torch::Tensor*>& inputs) {
  const int i = index_.at(&layer);
  // One tensor passed as several inputs gets one marked alias: a layer may
  // test its inputs' identity (nn.MultiheadAttention's `query is key`,
  // whose self-attention path saves other tensors).
  std::map<const c10::TensorImpl*, torch::Tensor> aliases;
  for (torch::Tensor* input : inputs) {
    if (!input->defined() || !input->requires_grad()) continue;
    torch::Tensor& alias = aliases[input->unsafeGetTensorImpl()];
    if (!alias.defined()) {
      alias = marked(*input, [this, i] { input_gradient_done(i); });
      ++pending_inputs_[i];
    }
    *input = alias;
  }
  bytes_[i].forward_gap_peak_bytes = gap_peak();
  restart_peak();
  bytes_[i].forward_start_bytes = memory_.current();
  ++open_layers_;
  timer_.begin(i, Pass::forward);
}

void LayerRecorder::forward_end(const executor::Layer& layer, torch::Tensor& output) {
  const int i = index_.at(&layer);
  timer_.end(i, Pass::forward);
  bytes_[i].forward_end_bytes = memory_.current();
  bytes_[i].forward_peak_bytes = memory_.peak();
  if (memory_limit_ > 0 && step_peak() > memory_limit_) throw MemoryLimitExceeded(peak_, memory_limit_);
  --open_layers_;
  open_gap();
  if (output.defined() && output.requires_grad()) {
    output = marked(output, [this, i] { backward_begin(i); });
  }
}

void LayerRecorder::backward_begin(int i) {
  for (int open : std::exchange(open_without_inputs_, {})) {
    if (backward_open_[open]) backward_end(open);
  }
  if (pending_inputs_[i] == 0) open_without_inputs_.push_back(i);
  bytes_[i].backward_gap_peak_bytes = gap_peak();
  restart_peak();
  bytes_[i].backward_start_bytes = memory_.current();
  backward_open_[i] = true;
  ++open_layers_;
  timer_.begin(i, Pass::backward);
}

void LayerRecorder::input_gradient_done(int i) {
  if (--pending_inputs_[i] == 0 && backward_open_[i]) backward_end(i);
}

void LayerRecorder::backward_end(int i) {
  timer_.end(i, Pass::backward);
  bytes_[i].backward_end_bytes = memory_.current();
  bytes_[i].backward_peak_bytes = memory_.peak();
  backward_open_[i] = false;
  --open_layers_;
  open_gap();
}

void LayerRecorder::open_gap() {
  in_gap_ = open_layers_ == 0;
  if (in_gap_) restart_peak();
}

int64_t LayerRecorder::gap_peak() {
  const int64_t current = memory_.current();
  return in_gap_ ? std::max(memory_.peak(), current) : current;
}

void LayerRecorder::finish_backward() {
  for (size_t i = 0; i < backward_open_.size(); ++i) {
    if (backward_open_[i]) backward_end(static_cast<int>(i));
  }
}

}  // namespace papaya::profiler
