#include "executor/segment.h"

#include <optional>

#include "executor/differentiate.h"
#include "executor/layer.h"
#include "executor/random_state.h"
#include "executor/storage/saved.h"

namespace papaya::executor {
namespace {

// Checkpointing a segment: forward runs its layers without autograd and
// stores only its input (raw, quantized or swapped, as the segment's
// strategy says) and, where it draws random numbers, the random state;
// backward restores that (so dropout draws the same masks), rebuilds the
// input, runs the layers again with autograd (on their native path) and
// differentiates them. With a raw input the gradients are bit-identical to
// keeping everything.

using torch::autograd::Function;

struct CheckpointState : torch::CustomClassHolder {
  Segment* segment = nullptr;
  c10::intrusive_ptr<Stored> input;
  std::optional<RandomState> random;  // where the segment draws random numbers
};

constexpr const char* state_key = "papaya_checkpoint";

// The segment's buffers (batch-norm running statistics), put back after the
// recomputation so that they move once per step, as without checkpointing.
class BufferSnapshot {
 public:
  explicit BufferSnapshot(Segment& segment) {
    for (auto& b : segment.running_state()) saved_.emplace_back(b, b.clone());
  }
  ~BufferSnapshot() {
    const torch::NoGradGuard no_grad;
    for (auto& [buffer, copy] : saved_) buffer.copy_(copy);
  }

 private:
  std::vector<std::pair<at::Tensor, at::Tensor>> saved_;
};

struct CheckpointFunction : Function<CheckpointFunction> {
  static at::Tensor forward(AutogradContext* ctx, Segment* segment, const at::Tensor& x, at::TensorList) {
    auto state = c10::make_intrusive<CheckpointState>();
    state->segment = segment;
    if (segment->draws_random()) state->random = RandomState::capture(x.device());
    const at::Tensor y = segment->run_layers(x);
    StoreSpec spec{segment->strategy().input, nullptr, -1, segment->strategy().name()};
    state->input = store(x, model::SlotKind::activation, spec);
    ctx->saved_data[state_key] = c10::IValue::make_capsule(std::move(state));
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    const auto state = c10::static_intrusive_pointer_cast<CheckpointState>(take_capsule(ctx, state_key));
    Segment& segment = *state->segment;
    at::Tensor x = state->input->restore().detach();
    // The network's own input needs no gradient: asking for one would hold a
    // tensor of its size for nothing.
    if (ctx->needs_input_grad(0)) x.requires_grad_(true);
    // Buffers are put back after differentiating: the graph saves them.
    const BufferSnapshot buffers(segment);
    // The output's graph, not its values (as large as anything the segment holds).
    torch::autograd::Edge graph;
    {
      const std::optional<RandomState> now =
          state->random ? std::optional<RandomState>(RandomState::capture(x.device())) : std::nullopt;
      if (state->random) state->random->restore();
      const torch::AutoGradMode with_grad(true);
      graph = graph_of(segment.run_layers(x));
      if (now) now->restore();
    }
    differentiate(graph, grad[0]);
    variable_list out(2 + segment.weights().size());  // the parameters' gradients are in their .grad already
    out[1] = ctx->needs_input_grad(0) ? x.grad() : at::Tensor();
    return out;
  }
};

torch::Tensor checkpoint(Segment& segment, const torch::Tensor& x) {
  const std::vector<at::Tensor> params = segment.weights();
  return CheckpointFunction::apply(&segment, x, at::TensorList(params));
}

}  // namespace

// A dropout's (a dropout layer, fused attention's dropout): the generators' state is a few KB held from forward to
// backward (3.7% of a small MLP's recompute-all peak), kept only where needed.
bool Segment::draws_random() {
  for (const auto& module : modules(/*include_self=*/false)) {
    const auto* layer = dynamic_cast<const Layer*>(module.get());
    if (layer && layer->draws_random()) return true;
  }
  return false;
}

std::vector<torch::Tensor> Segment::running_state() {
  std::vector<torch::Tensor> state;
  for (const auto& module : modules(/*include_self=*/false)) {
    if (auto* layer = dynamic_cast<Layer*>(module.get())) {
      for (auto& tensor : layer->running_state()) state.push_back(tensor);
    }
  }
  return state;
}

torch::Tensor Segment::run(torch::Tensor x) {
  if (strategy_.recompute && torch::GradMode::is_enabled()) return checkpoint(*this, x);
  return forward(std::move(x));
}

}  // namespace papaya::executor
