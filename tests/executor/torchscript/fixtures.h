#pragma once
// TorchScript modules defined in C++, saved and loaded back as a user's
// archive would be. A submodule's forward is called as self.child.forward(x):
// a prim::CallMethod, as scripting self.child(x) makes. TorchScript source
// cannot name a child "0": Sequential's children are b0, b1 (the container's
// type is what makes its children segments).
#include <caffe2/serialize/inline_container.h>
#include <torch/script.h>

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <sstream>
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

// A one-layer LSTM of `in` inputs and `hidden` units as a module of its own
// calling torch.lstm (batch first, from a zero state) and returning its
// output, through `method` (scripted nn.LSTM's is forward__0, an overload).
inline torch::jit::Module lstm(int64_t in, int64_t hidden, const std::string& method = "forward") {
  torch::jit::Module m("LSTM");
  m.register_parameter("w_ih", (0.3 * torch::randn({4 * hidden, in})).requires_grad_(), false);
  m.register_parameter("w_hh", (0.3 * torch::randn({4 * hidden, hidden})).requires_grad_(), false);
  m.register_parameter("b_ih", torch::zeros({4 * hidden}).requires_grad_(), false);
  m.register_parameter("b_hh", torch::zeros({4 * hidden}).requires_grad_(), false);
  m.define("def " + method + "(self, x):\n  h0 = torch.zeros([1, x.size(0), " + std::to_string(hidden) +
           "], dtype=x.dtype)\n  out, h, c = torch.lstm(x, [h0, h0], [self.w_ih, self.w_hh, self.b_ih, self.b_hh], True, 1, "
           "0.0, True, False, True)\n  return out\n");
  return m;
}

// Where a test can save an archive: a temporary file named after `name`,
// the process and the call (tests run in parallel, each its own process,
// and their fixtures' weights are random).
inline std::string archive_path(const std::string& name) {
  static int calls = 0;
  const std::string file =
      "papaya-torchscript-" + name + "-" + std::to_string(::getpid()) + "-" + std::to_string(calls++) + ".pt";
  return (std::filesystem::temp_directory_path() / file).string();
}

// The module saved where a test can load it (archive_path).
inline std::string saved(const torch::jit::Module& m, const std::string& name, const torch::jit::ExtraFilesMap& extra = {}) {
  const std::string path = archive_path(name);
  m.save(path, extra);
  return path;
}

// The module saved to `path` with every record of its zip stored, not
// deflated (LibTorch reads either), each record's bytes first given to
// `edit` with its name ("code/__torch__.py", "data.pkl"): an archive
// damaged where a test chooses, or a fuzzer's seed.
using RecordEdit = std::function<void(const std::string& record, std::string& bytes)>;
inline void save_stored(const torch::jit::Module& m, const std::string& path, const torch::jit::ExtraFilesMap& extra = {},
                        const RecordEdit& edit = {}) {
  std::ostringstream saved_bytes;
  m.save(saved_bytes, extra);
  std::istringstream in(saved_bytes.str());
  caffe2::serialize::PyTorchStreamReader reader(&in);
  caffe2::serialize::PyTorchStreamWriter writer(path);
  writer.setMinVersion(reader.version());
  for (const auto& record : reader.getAllRecords()) {
    if (record == "version" || record == ".data/version") continue;  // the writer writes its own
    const auto [data, size] = reader.getRecord(record);
    std::string bytes(static_cast<const char*>(data.get()), size);
    if (edit) edit(record, bytes);
    writer.writeRecord(record, bytes.data(), bytes.size(), false);
  }
  writer.writeEndOfFile();
}

// A Sequential of two children, named `first` and `second`, run in order.
inline torch::jit::Module sequential(const torch::jit::Module& a, const torch::jit::Module& b, const std::string& first = "b0",
                                     const std::string& second = "b1") {
  torch::jit::Module m("Sequential");
  m.register_module(first, a);
  m.register_module(second, b);
  m.define("def forward(self, x):\n  return self." + second + ".forward(self." + first + ".forward(x))\n");
  return m;
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
    relu.define(in_place ? "def forward(self, x):\n  return torch.relu_(x)\n"
                         : "def forward(self, x):\n  return torch.relu(x)\n");
    m.register_module("relu", relu);
    m.register_module("conv2", conv(8, 8));
    m.define(std::string("def forward(self, x):\n") + "  y = self.conv2.forward(self.relu.forward(self.conv1.forward(x)))\n" +
             (in_place ? "  y += x\n  return self.relu.forward(y)\n" : "  return self.relu.forward(y + x)\n"));
    return m;
  };
  const torch::jit::Module layers = sequential(block(), block());
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

// A small pre-norm transformer language model on int64[B,6]<16 token ids: an
// embedding, a Sequential of two blocks (one LayerNorm module run before the
// attention and again before the MLP: a module called twice; single-head
// attention whose scores are its own ops between its linears; an MLP with
// GELU), a final norm and a head to [B,6,16] logits. `returns_loss`:
// forward(ids, targets) returns the cross-entropy itself, a scalar.
inline torch::jit::Module small_transformer(bool returns_loss = false) {
  const auto dense = [](int64_t in, int64_t out) {
    torch::jit::Module m("Dense");
    m.register_parameter("weight", (0.3 * torch::randn({in, out})).requires_grad_(), false);
    m.register_parameter("bias", (0.1 * torch::randn({out})).requires_grad_(), false);
    m.define("def forward(self, x):\n  return x.matmul(self.weight) + self.bias\n");
    return m;
  };
  const auto norm = [] {
    torch::jit::Module m("Norm");
    m.register_parameter("weight", torch::ones({8}).requires_grad_(), false);
    m.register_parameter("bias", torch::zeros({8}).requires_grad_(), false);
    m.define("def forward(self, x):\n  return torch.layer_norm(x, [8], self.weight, self.bias, 1e-5, False)\n");
    return m;
  };
  const auto block = [&] {
    torch::jit::Module attention("Attention");
    attention.register_module("qkv", dense(8, 24));
    attention.register_module("proj", dense(8, 8));
    attention.define(R"(def forward(self, x):
  q, k, v = self.qkv.forward(x).chunk(3, -1)
  a = torch.softmax(q.matmul(k.transpose(1, 2)) * 0.35, -1)
  return self.proj.forward(a.matmul(v))
)");
    torch::jit::Module gelu("GELU");
    gelu.define("def forward(self, x):\n  return torch.gelu(x)\n");
    torch::jit::Module m("Block");
    m.register_module("norm", norm());
    m.register_module("attn", attention);
    m.register_module("fc1", dense(8, 16));
    m.register_module("gelu", gelu);
    m.register_module("fc2", dense(16, 8));
    m.define(R"(def forward(self, x):
  x = x + self.attn.forward(self.norm.forward(x))
  return x + self.fc2.forward(self.gelu.forward(self.fc1.forward(self.norm.forward(x))))
)");
    return m;
  };
  torch::jit::Module embed("Embedding");
  embed.register_parameter("weight", torch::randn({16, 8}).requires_grad_(), false);
  embed.define("def forward(self, ids):\n  return torch.embedding(self.weight, ids)\n");
  const torch::jit::Module blocks = sequential(block(), block());
  torch::jit::Module top("LanguageModel");
  top.register_module("embed", embed);
  top.register_module("blocks", blocks);
  top.register_module("norm", norm());
  top.register_module("head", dense(8, 16));
  const std::string logits = "self.head.forward(self.norm.forward(self.blocks.forward(self.embed.forward(ids))))";
  top.define(returns_loss ? "def forward(self, ids, targets):\n  z = " + logits +
                                "\n  return torch.cross_entropy_loss(z.reshape([-1, 16]), targets.reshape([-1]))\n"
                          : "def forward(self, ids):\n  return " + logits + "\n");
  return top;
}

// A network that refuses batch 1 in training mode, as torchvision's
// BatchNorm2d does over a 1x1 map: float32[B,4,2,2] images pooled to one
// value per channel, batch-normalized (the same check of the batch as
// PyTorch's F.batch_norm), then [B,3] logits.
inline torch::jit::Module pooled_batch_norm() {
  torch::jit::Module norm("PooledNorm");
  norm.register_parameter("weight", torch::ones({4}).requires_grad_(), false);
  norm.register_parameter("bias", torch::zeros({4}).requires_grad_(), false);
  norm.register_buffer("running_mean", torch::zeros({4}));
  norm.register_buffer("running_var", torch::ones({4}));
  norm.register_attribute("training", c10::BoolType::get(), true);  // as nn.Module's, which the C++ Module lacks
  norm.define(R"(def forward(self, x):
  p = x.mean([2, 3], True)
  assert not self.training or p.size(0) * p.size(2) * p.size(3) > 1, "Expected more than 1 value per channel when training"
  return torch.batch_norm(p, self.weight, self.bias, self.running_mean, self.running_var, self.training, 0.1, 1e-5, False)
)");
  torch::jit::Module head("Head");
  head.register_parameter("weight", (0.3 * torch::randn({4, 3})).requires_grad_(), false);
  head.define("def forward(self, x):\n  return x.flatten(1).mm(self.weight)\n");
  torch::jit::Module top("Net");
  top.register_module("norm", norm);
  top.register_module("head", head);
  top.define("def forward(self, x):\n  return self.head.forward(self.norm.forward(x))\n");
  return top;
}

// nanoGPT's embeddings on int64[B,8]<16 token ids: a token table looked up
// by the ids and a position table by torch.arange(tokens), a tensor without
// the batch (its lookup broadcast over the batch when added), then a head
// to [B,8,16] logits.
inline torch::jit::Module positions_from_arange() {
  const auto table = [](int64_t rows) {
    torch::jit::Module m("Embedding");
    m.register_parameter("weight", torch::randn({rows, 8}).requires_grad_(), false);
    m.define("def forward(self, ids):\n  return torch.embedding(self.weight, ids)\n");
    return m;
  };
  torch::jit::Module head("Head");
  head.register_parameter("weight", (0.3 * torch::randn({8, 16})).requires_grad_(), false);
  head.define("def forward(self, x):\n  return x.matmul(self.weight)\n");
  torch::jit::Module top("NanoGpt");
  top.register_module("tok", table(16));
  top.register_module("pos", table(8));
  top.register_module("head", head);
  top.define(R"(def forward(self, ids):
  positions = torch.arange(ids.size(1), device=ids.device)
  return self.head.forward(self.tok.forward(ids) + self.pos.forward(positions))
)");
  return top;
}

}  // namespace papaya::executor::torchscript::testing
