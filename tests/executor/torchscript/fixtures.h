#pragma once
// TorchScript modules defined in C++, saved and loaded back as a user's
// archive would be. A submodule's forward is called as self.child.forward(x):
// a prim::CallMethod, as scripting self.child(x) makes. TorchScript source
// cannot name a child "0": Sequential's children are b0, b1 (the container's
// type is what makes its children segments).
#include <torch/script.h>

#include <filesystem>
#include <string>

namespace papaya::executor::torchscript::testing {

// x @ weight + bias, then ReLU; weights frozen unless `trainable`.
inline torch::jit::Module linear(const std::string& type, int64_t in, int64_t out, bool trainable = false) {
  torch::jit::Module m(type);
  m.register_parameter("weight", torch::randn({in, out}).requires_grad_(trainable), false);
  m.register_parameter("bias", torch::zeros({out}).requires_grad_(trainable), false);
  m.define("def forward(self, x):\n  return torch.relu(x.mm(self.weight) + self.bias)\n");
  return m;
}

// The module saved where a test can load it: a temporary file named after `name`.
inline std::string saved(const torch::jit::Module& m, const std::string& name, const torch::jit::ExtraFilesMap& extra = {}) {
  const std::string path = (std::filesystem::temp_directory_path() / ("papaya-torchscript-" + name + ".pt")).string();
  m.save(path, extra);
  return path;
}

// A small residual CNN on float32[B,3,8,8] images returning [B,10] logits:
// a stem convolution, a Sequential of two blocks (conv1, relu, conv2, the
// same relu again after the residual sum: a module called twice), a head
// (mean over the image, then a matrix product). Every weight trainable.
// `in_place`: the ReLU and the residual sum work in place (relu_, +=), as
// torchvision's ResNet does.
inline torch::jit::Module small_cnn(bool in_place = false) {
  const auto conv = [](int64_t in, int64_t out) {
    torch::jit::Module m("Conv");
    m.register_parameter("weight", (0.3 * torch::randn({out, in, 3, 3})).requires_grad_(), false);
    m.register_parameter("bias", torch::zeros({out}).requires_grad_(), false);
    m.define("def forward(self, x):\n  return torch.conv2d(x, self.weight, self.bias, [1, 1], [1, 1])\n");
    return m;
  };
  const auto block = [&] {
    torch::jit::Module m("Block");
    m.register_module("conv1", conv(8, 8));
    torch::jit::Module relu("ReLU");
    relu.define(in_place ? "def forward(self, x):\n  return torch.relu_(x)\n" : "def forward(self, x):\n  return torch.relu(x)\n");
    m.register_module("relu", relu);
    m.register_module("conv2", conv(8, 8));
    m.define(std::string("def forward(self, x):\n") +
             "  y = self.conv2.forward(self.relu.forward(self.conv1.forward(x)))\n" +
             (in_place ? "  y += x\n  return self.relu.forward(y)\n" : "  return self.relu.forward(y + x)\n"));
    return m;
  };
  torch::jit::Module layers("Sequential");
  layers.register_module("b0", block());
  layers.register_module("b1", block());
  layers.define("def forward(self, x):\n  return self.b1.forward(self.b0.forward(x))\n");
  torch::jit::Module head("Head");
  head.register_parameter("weight", (0.3 * torch::randn({8, 10})).requires_grad_(), false);
  head.define("def forward(self, x):\n  return x.mean([2, 3]).mm(self.weight)\n");
  torch::jit::Module top("Net");
  top.register_module("stem", conv(3, 8));
  top.register_module("layers", layers);
  top.register_module("head", head);
  top.define("def forward(self, x):\n  return self.head.forward(self.layers.forward(self.stem.forward(x)))\n");
  return top;
}

}  // namespace papaya::executor::torchscript::testing
