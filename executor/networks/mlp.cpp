// A multi-layer perceptron: blocks of linear, activation (and dropout), then
// a classifier.
#include "executor/layers/dense.h"
#include "executor/layers/elementwise.h"
#include "executor/layers/loss.h"
#include "executor/networks/zoo.h"

namespace papaya::executor {
namespace {

class MlpBlock : public Segment {
 public:
  MlpBlock(int64_t in, int64_t out, const std::string& activation, double dropout) {
    fc = register_module("fc", std::make_shared<Linear>(in, out));
    act = register_module("act", std::make_shared<Activation>(activation));
    if (dropout > 0) drop = register_module("drop", std::make_shared<Dropout>(dropout));
  }
  std::shared_ptr<Linear> fc;
  std::shared_ptr<Activation> act;
  std::shared_ptr<Dropout> drop;

 protected:
  torch::Tensor forward(torch::Tensor x) override {
    x = act->forward(fc->forward(x));
    return drop ? drop->forward(x) : x;
  }
};

class Mlp : public Network {
 public:
  explicit Mlp(const model::NetworkConfig& config) : Network(config) {
    const auto& c = config.mlp();
    blocks = register_module("blocks", torch::nn::ModuleList());
    int64_t in = c.input;
    for (int width : c.hidden) {
      blocks->push_back(std::make_shared<MlpBlock>(in, width, c.activation, c.dropout));
      in = width;
    }
    head = register_module("head", std::make_shared<Linear>(in, c.classes));
    loss_fn = register_module("loss", std::make_shared<CrossEntropy>());
    index_paths();
  }

  torch::Tensor loss(const Batch& batch) override {
    torch::Tensor x = batch.input.to(compute_dtype());
    for (const auto& block : *blocks) x = block->as<Segment>()->run(x);
    return loss_fn->forward(head->forward(x), batch.target);
  }

  torch::nn::ModuleList blocks{nullptr};
  std::shared_ptr<Linear> head;
  std::shared_ptr<CrossEntropy> loss_fn;
};

}  // namespace

std::shared_ptr<Network> build_mlp(const model::NetworkConfig& config) { return std::make_shared<Mlp>(config); }

}  // namespace papaya::executor
