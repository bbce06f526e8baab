// ResNet (He et al.): stem (7x7 conv, BatchNorm, ReLU, max-pool), stages of
// basic or bottleneck residual blocks, global average pool, classifier.
#include "executor/layers/conv.h"
#include "executor/layers/dense.h"
#include "executor/layers/elementwise.h"
#include "executor/layers/loss.h"
#include "executor/layers/norm.h"
#include "executor/networks/zoo.h"

namespace papaya::executor {
namespace {

// 1x1 convolution and BatchNorm matching the shortcut to the block's output.
class Downsample : public torch::nn::Module {
 public:
  Downsample(int64_t in, int64_t out, int64_t stride) {
    conv = register_module("conv", std::make_shared<Conv2d>(in, out, 1, stride, 0));
    bn = register_module("bn", std::make_shared<BatchNorm2d>(out));
  }
  torch::Tensor forward(const torch::Tensor& x) { return bn->forward(conv->forward(x)); }
  std::shared_ptr<Conv2d> conv;
  std::shared_ptr<BatchNorm2d> bn;
};

// Basic: two 3x3 convolutions. Bottleneck: 1x1 down, 3x3, 1x1 up (x4).
// Layers are registered in the order forward runs them.
class ResidualBlock : public Segment {
 public:
  ResidualBlock(bool bottleneck, int64_t in, int64_t width, int64_t stride) {
    const int64_t out = bottleneck ? 4 * width : width;
    if (bottleneck) {
      add_unit(in, width, 1, 1, 0, true);
      add_unit(width, width, 3, stride, 1, true);
      add_unit(width, out, 1, 1, 0, false);
    } else {
      add_unit(in, width, 3, stride, 1, true);
      add_unit(width, out, 3, 1, 1, false);
    }
    if (stride != 1 || in != out) downsample = register_module("downsample", std::make_shared<Downsample>(in, out, stride));
    relu_out = register_module("relu" + std::to_string(convs.size()), std::make_shared<Activation>("relu"));
  }

  std::vector<std::shared_ptr<Conv2d>> convs;
  std::vector<std::shared_ptr<BatchNorm2d>> bns;
  std::vector<std::shared_ptr<Activation>> relus;  // after all but the last unit
  std::shared_ptr<Downsample> downsample;
  std::shared_ptr<Activation> relu_out;

 protected:
  torch::Tensor forward(torch::Tensor x) override {
    torch::Tensor h = x;
    for (size_t i = 0; i < convs.size(); ++i) {
      h = convs[i]->forward(h);
      h = bns[i]->forward(h);
      if (i < relus.size()) h = relus[i]->forward(h);
    }
    h = h + (downsample ? downsample->forward(x) : x);
    return relu_out->forward(h);
  }

 private:
  void add_unit(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding, bool relu) {
    const std::string n = std::to_string(convs.size() + 1);
    convs.push_back(register_module("conv" + n, std::make_shared<Conv2d>(in, out, kernel, stride, padding)));
    bns.push_back(register_module("bn" + n, std::make_shared<BatchNorm2d>(out)));
    if (relu) relus.push_back(register_module("relu" + n, std::make_shared<Activation>("relu")));
  }
};

class ResNet : public Network {
 public:
  explicit ResNet(const model::NetworkConfig& config) : Network(config) {
    const auto& c = config.resnet();
    const bool bottleneck = c.block == "bottleneck";
    conv1 = register_module("conv1", std::make_shared<Conv2d>(c.channels, c.width, 7, 2, 3));
    bn1 = register_module("bn1", std::make_shared<BatchNorm2d>(c.width));
    relu = register_module("relu", std::make_shared<Activation>("relu"));
    maxpool = register_module("maxpool", std::make_shared<MaxPool2d>(3, 2, 1));
    int64_t in = c.width;
    for (size_t stage = 0; stage < c.stages.size(); ++stage) {
      auto blocks = register_module("layer" + std::to_string(stage + 1), torch::nn::ModuleList());
      const int64_t width = c.width << stage;
      for (int i = 0; i < c.stages[stage]; ++i) {
        const int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
        blocks->push_back(std::make_shared<ResidualBlock>(bottleneck, in, width, stride));
        in = bottleneck ? 4 * width : width;
      }
      stages.push_back(blocks);
    }
    avgpool = register_module("avgpool", std::make_shared<GlobalAvgPool>());
    fc = register_module("fc", std::make_shared<Linear>(in, c.classes));
    loss_fn = register_module("loss", std::make_shared<CrossEntropy>());
    index_paths();
  }

  torch::Tensor loss(const Batch& batch) override {
    // One statement per layer: an output is released once the next layer is
    // done with it (a nested call would hold it to the end of the statement),
    // so a plan that stores it in another form frees the raw tensor then.
    torch::Tensor x = conv1->forward(batch.input.to(compute_dtype()));
    x = bn1->forward(x);
    x = relu->forward(x);
    x = maxpool->forward(x);
    for (const auto& stage : stages) {
      for (const auto& block : *stage) x = block->as<Segment>()->run(x);
    }
    x = avgpool->forward(x);
    x = fc->forward(x);
    return loss_fn->forward(x, batch.target);
  }

  std::shared_ptr<Conv2d> conv1;
  std::shared_ptr<BatchNorm2d> bn1;
  std::shared_ptr<Activation> relu;
  std::shared_ptr<MaxPool2d> maxpool;
  std::vector<torch::nn::ModuleList> stages;
  std::shared_ptr<GlobalAvgPool> avgpool;
  std::shared_ptr<Linear> fc;
  std::shared_ptr<CrossEntropy> loss_fn;
};

}  // namespace

std::shared_ptr<Network> build_resnet(const model::NetworkConfig& config) { return std::make_shared<ResNet>(config); }

}  // namespace papaya::executor
