// Checks, node by node of the autograd graph, that the markers LayerRecorder
// sets bracket each layer's own backward work and nothing else — on networks
// with residual connections (pre-norm and post-norm transformers, ResNet with
// and without a downsampling shortcut), where a marker that caught the skip
// path's gradient would end a layer's backward too late.
#include <ATen/SequenceNumber.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/function.h>

#include <atomic>
#include <cstdio>
#include <set>

#include "executor/data.h"
#include "executor/memory.h"
#include "executor/networks/source_for.h"
#include "executor/networks/zoo.h"
#include "executor/torchscript/imported_network.h"
#include "model/catalog/network_config.h"
#include "profiler/layer_recorder.h"
#include "tests/executor/torchscript/fixtures.h"
#include "tests/support/test_names.h"

namespace papaya::profiler {
namespace {

std::atomic<int64_t> clock_ticks{0};

// Forward: the autograd sequence numbers a layer's nodes get (the nodes made
// between its markers). Backward: the clock at its begin and end markers.
class SequenceTimer : public LayerTimer {
 public:
  explicit SequenceTimer(int layers) : first(layers, -1), past(layers, -1), begun(layers, -1), ended(layers, -1) {}
  void start_step() override {}
  void begin(int layer, Pass pass) override {
    if (pass == Pass::forward) {
      first[layer] = static_cast<int64_t>(at::sequence_number::peek());
    } else {
      begun[layer] = ++clock_ticks;
    }
  }
  void end(int layer, Pass pass) override {
    if (pass == Pass::forward) {
      past[layer] = static_cast<int64_t>(at::sequence_number::peek());
    } else {
      ended[layer] = ++clock_ticks;
    }
  }
  std::vector<PassTimes> finish_step() override { return {}; }
  std::string name() const override { return "sequence"; }

  std::vector<int64_t> first, past, begun, ended;
};

struct NodeRun {
  std::string name;
  int64_t sequence, tick;
};

class Tick : public torch::autograd::FunctionPreHook {
 public:
  Tick(const torch::autograd::Node& node, std::vector<NodeRun>& runs) : node_(node), runs_(runs) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& grads) override {
    runs_.push_back({node_.name(), static_cast<int64_t>(node_.sequence_nr()), ++clock_ticks});
    return grads;
  }

 private:
  const torch::autograd::Node& node_;
  std::vector<NodeRun>& runs_;
};

// Every node that backward will run, ticking the clock when it starts.
void tick_every_node(const torch::Tensor& loss, std::vector<NodeRun>& runs) {
  std::vector<torch::autograd::Node*> stack = {loss.grad_fn().get()};
  std::set<torch::autograd::Node*> seen(stack.begin(), stack.end());
  while (!stack.empty()) {
    torch::autograd::Node* node = stack.back();
    stack.pop_back();
    node->add_pre_hook(std::make_unique<Tick>(*node, runs));
    for (const auto& edge : node->next_edges()) {
      if (edge.function && seen.insert(edge.function.get()).second) stack.push_back(edge.function.get());
    }
  }
}

class Markers : public ::testing::TestWithParam<std::string> {};

// One step of `network` on a batch of 2, checked node by node.
void check_markers(const std::shared_ptr<executor::Network>& network) {
  auto data = executor::make_synthetic_data(network->config(), torch::kCPU, 0);
  executor::MemoryTracker memory(torch::kCPU);
  const auto& layers = network->layers();
  SequenceTimer timer(static_cast<int>(layers.size()));
  LayerRecorder recorder(*network, timer, memory);
  recorder.start_step();
  torch::Tensor loss;
  {
    executor::ObserverGuard guard(&recorder);
    loss = network->loss(data->next(2));
  }
  std::vector<NodeRun> runs;
  tick_every_node(loss, runs);
  loss.backward();
  recorder.finish_backward();

  const auto owner = [&](int64_t sequence) {
    for (size_t i = 0; i < layers.size(); ++i) {
      if (sequence >= timer.first[i] && sequence < timer.past[i]) return static_cast<int>(i);
    }
    return -1;
  };
  // A layer's marker nodes: the alias made of its output (numbered just after
  // its nodes) and those made of its inputs (just before them: one an input,
  // three at most, fused attention's q, k and v).
  const auto is_marker_of = [&](const NodeRun& run, size_t i) {
    return run.name == "MarkerBackward" &&
           (run.sequence == timer.past[i] || (run.sequence < timer.first[i] && run.sequence >= timer.first[i] - 3));
  };
  int checked = 0;
  for (const NodeRun& run : runs) {
    if (run.name.find("AccumulateGrad") != std::string::npos) continue;  // a weight's gradient, run where it is ready
    const int own = owner(run.sequence);
    for (size_t i = 0; i < layers.size(); ++i) {
      const bool inside = run.tick > timer.begun[i] && run.tick < timer.ended[i];
      if (static_cast<int>(i) == own) {
        EXPECT_TRUE(inside) << run.name << " of " << layers[i]->path() << " runs outside its backward markers";
        ++checked;
      } else if (inside) {
        EXPECT_TRUE(is_marker_of(run, i)) << run.name << " (" << (own < 0 ? "between layers" : layers[own]->path())
                                          << ") runs inside the backward markers of " << layers[i]->path();
      }
    }
  }
  EXPECT_GT(checked, static_cast<int>(layers.size()));
  for (size_t i = 0; i < layers.size(); ++i) {
    EXPECT_GT(timer.begun[i], 0) << layers[i]->path();
    EXPECT_GT(timer.ended[i], timer.begun[i]) << layers[i]->path();
  }
}

TEST_P(Markers, BracketTheLayersOwnBackwardNodes) {
  check_markers(executor::build_network(model::load_network_config(GetParam())));
}

// A TorchScript network whose ReLU and residual sum work in place: the
// markers stay on the gradient's path.
TEST(Markers, HoldAroundInPlaceOpsOfAnImportedNetwork) {
  const std::string path = executor::torchscript::testing::saved(executor::torchscript::testing::small_cnn(true), "in-place");
  const auto config = executor::torchscript::archive_config(path, {"float32[B,3,8,8]"}, "--input", std::nullopt);
  check_markers(executor::source_for(config)->build());
  std::remove(path.c_str());
}

// One tensor passed to a layer as two arguments stays one tensor behind the
// markers: nn.MultiheadAttention tests `query is key`, and its other path
// saves other tensors than the first forward saw (which papaya refuses).
TEST(Markers, KeepATensorPassedTwiceOneTensor) {
  torch::jit::Module attention("Attention");
  attention.register_parameter("weight", torch::randn({3, 3}).requires_grad_(), false);
  attention.define(R"(def forward(self, q, k):
  if q is k:
    return torch.tanh(q.mm(self.weight))
  return torch.tanh(q.mm(self.weight)) * torch.sigmoid(k)
)");
  torch::jit::Module top("Net");
  top.register_module("stem", executor::torchscript::testing::linear("Linear", 3, 3, true));
  top.register_module("att", attention);
  top.define("def forward(self, x):\n  y = self.stem.forward(x)\n  return self.att.forward(y, y).sum()\n");
  const std::string path = executor::torchscript::testing::saved(top, "same-tensor");
  const auto config = executor::torchscript::archive_config(path, {"float32[B,3]"}, "--input", std::nullopt);
  check_markers(executor::source_for(config)->build());
  std::remove(path.c_str());
}

// One encoder applied to two inputs (a siamese pair): the first layer of
// each call takes an input without a gradient, so no input marker ends its
// backward; the one whose backward runs first ends where the other call's
// layers begin theirs, not when the whole backward returns.
TEST(Markers, EndTheFirstLayerOfEachBranchWhereTheNextLayerBegins) {
  namespace fixtures = executor::torchscript::testing;
  torch::jit::Module top("Siamese");
  top.register_module("enc",
                      fixtures::sequential(fixtures::linear("Linear", 3, 4, true), fixtures::linear("Linear", 4, 4, true)));
  top.define("def forward(self, x):\n  return (self.enc.forward(x) * self.enc.forward(x * 0.5)).sum()\n");
  const std::string path = fixtures::saved(top, "two-calls");
  const auto config = executor::torchscript::archive_config(path, {"float32[B,3]"}, "--input", std::nullopt);
  check_markers(executor::source_for(config)->build());
  std::remove(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Residual, Markers, ::testing::Values("gpt-tiny", "bert-tiny", "vit-tiny", "resnet-tiny", "mlp-tiny"),
                         test_support::NetworkParamName());

}  // namespace
}  // namespace papaya::profiler
