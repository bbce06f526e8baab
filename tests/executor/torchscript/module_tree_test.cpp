#include "executor/torchscript/module_tree.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "executor/torchscript/archive.h"
#include "model/error.h"
#include "tests/executor/torchscript/fixtures.h"

namespace papaya::executor::torchscript {
namespace {

using torch::jit::Module;

using testing::archive_path;
using testing::linear;
using testing::save_stored;
using testing::saved;
using testing::small_cnn;

Module block(int64_t width) {
  Module m("Block");
  m.register_module("a", linear("Linear", width, width));
  m.register_module("b", linear("Linear", width, width));
  m.define("def forward(self, x):\n  return self.b.forward(self.a.forward(x)) + x\n");
  return m;
}

std::map<std::string, ModuleNode> by_path(const ModuleTree& tree) {
  std::map<std::string, ModuleNode> out;
  for (const auto& m : tree.modules) out[m.path] = m;
  return out;
}

// Sequential with children b0, b1 (TorchScript source cannot name a child
// "0"; the container's type is what makes its children segments).
Module network_with_sequential() {
  Module features("Sequential");
  features.register_module("b0", block(4));
  features.register_module("b1", block(4));
  features.define("def forward(self, x):\n  return self.b1.forward(self.b0.forward(x))\n");
  Module top("Net");
  top.register_module("features", features);
  top.register_module("head", linear("Linear", 4, 2));
  top.define("def forward(self, x):\n  return self.head.forward(self.features.forward(x)).sum()\n");
  return top;
}

TEST(ModuleTree, LayersAreTheCalledModulesThatCallNoOther) {
  const std::string path = saved(network_with_sequential(), "sequential");
  const Archive archive = load_archive(path);
  std::remove(path.c_str());
  const ModuleTree tree = module_tree(archive.module, path);
  const auto m = by_path(tree);

  // Four linears in the blocks and the head.
  EXPECT_EQ(tree.layers(), 5);
  for (const char* leaf : {"features.b0.a", "features.b0.b", "features.b1.a", "features.b1.b", "head"}) {
    EXPECT_TRUE(m.at(leaf).layer) << leaf;
    EXPECT_EQ(m.at(leaf).calls, 1) << leaf;
  }
  // The top's sum and a block's residual add run between layers.
  EXPECT_FALSE(m.at("").layer);
  EXPECT_EQ(m.at("").own_ops, std::vector<std::string>{"aten::sum"});
  EXPECT_FALSE(m.at("features.b0").layer);
  EXPECT_EQ(m.at("features.b0").own_ops, std::vector<std::string>{"aten::add"});
  EXPECT_FALSE(m.at("features").layer);  // calls its children, nothing else

  EXPECT_EQ(tree.segments(), 2);
  EXPECT_TRUE(m.at("features.b0").segment);
  EXPECT_TRUE(m.at("features.b1").segment);
  EXPECT_FALSE(m.at("head").segment);

  // Parameters: each linear's weight and bias, by module and in all.
  EXPECT_EQ(m.at("features.b0.a").parameters, 4 * 4 + 4);
  EXPECT_EQ(m.at("head").parameters, 4 * 2 + 2);
  EXPECT_EQ(tree.parameters, 4 * (4 * 4 + 4) + 4 * 2 + 2);
  EXPECT_EQ(m.at("features.b0").type, "Block");
}

TEST(ModuleTree, AModuleCalledTwiceAndSharedWeights) {
  Module top("Net");
  Module shared = linear("Linear", 3, 3);
  top.register_module("twice", shared);
  Module tied("Linear");
  tied.register_parameter("weight", shared.attr("weight").toTensor(), false);  // the same tensor
  tied.define("def forward(self, x):\n  return x.mm(self.weight)\n");
  top.register_module("tied", tied);
  top.define("def forward(self, x):\n  return self.tied.forward(self.twice.forward(self.twice.forward(x)))\n");
  const std::string path = saved(top, "twice");
  const Archive archive = load_archive(path);
  std::remove(path.c_str());
  const ModuleTree tree = module_tree(archive.module, path);
  const auto m = by_path(tree);

  EXPECT_EQ(m.at("twice").calls, 2);
  EXPECT_EQ(tree.layers(), 3);  // each call of twice, and tied
  EXPECT_EQ(m.at("tied").calls, 1);
  EXPECT_EQ(tree.parameters, 3 * 3 + 3);  // the tied weight once
  EXPECT_FALSE(m.at("").layer);           // no ops of its own
}

TEST(ModuleTree, AModuleWhoseCallsAreInlinedIsRefused) {
  Module top("Net");
  top.register_module("a", linear("Linear", 3, 3));
  top.define("def forward(self, x):\n  return x.mm(self.a.weight)\n");  // uses the child's weight, calls nothing
  const std::string path = saved(top, "frozen");
  const Archive archive = load_archive(path);
  std::remove(path.c_str());
  try {
    module_tree(archive.module, path);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": forward calls none of its 1 submodules"), std::string::npos) << e.what();
  }
}

TEST(Archive, WhatIsNotTorchScriptIsNamed) {
  const std::string path = (std::filesystem::temp_directory_path() / "papaya-torchscript-bad.pt").string();
  std::ofstream(path) << "{\"family\": \"gpt\"}";
  EXPECT_FALSE(looks_like_archive(path));
  try {
    load_archive(path);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": not a TorchScript archive (no zip header)");
  }
  std::ofstream(path, std::ios::binary) << "PK\x03\x04 not a zip after all";
  EXPECT_TRUE(looks_like_archive(path));
  try {
    load_archive(path);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ": not a TorchScript archive LibTorch can load (", 0), 0u) << e.what();
  }
  std::remove(path.c_str());
  EXPECT_THROW(load_archive(path), InputError);  // gone
}

// `m` saved with the first `from` in a record whose name starts with
// `record` replaced by `to`; the test fails where there is none.
std::string saved_damaged(const Module& m, const std::string& name, const std::string& record, const std::string& from,
                          const std::string& to) {
  const std::string path = archive_path(name);
  bool damaged = false;
  save_stored(m, path, {}, [&](const std::string& r, std::string& bytes) {
    const size_t at = bytes.find(from);
    if (damaged || r.rfind(record, 0) != 0 || at == std::string::npos) return;
    bytes.replace(at, from.size(), to);
    damaged = true;
  });
  EXPECT_TRUE(damaged) << from << " in no record " << record;
  return path;
}

// load_archive's InputError for `path`, which is removed ("" and a failure where it loads).
std::string load_error(const std::string& path) {
  std::string what;
  try {
    load_archive(path);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    what = e.what();
  }
  std::remove(path.c_str());
  return what;
}

// Damaged where LibTorch's compiler reads it (the code of a forward), an
// archive is an InputError of one line naming the file: the compiler's own
// report is another exception than c10::Error, and starts with a blank line.
TEST(Archive, DamagedCodeIsNamedInOneLine) {
  const std::string path = saved_damaged(small_cnn(), "damaged-code", "code/", "torch.conv2d(", "torch.conv2d((");  // unclosed
  const std::string what = load_error(path);
  EXPECT_EQ(what.rfind(path + ": not a TorchScript archive LibTorch can load (", 0), 0u) << what;
  EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  EXPECT_EQ(what.find("no message"), std::string::npos) << what;
}

// A size in the pickle damaged so that a tensor claims more than its
// storage holds: LibTorch loads it (and would read past the storage when it
// runs); papaya refuses it, naming the tensor.
TEST(Archive, ATensorLargerThanItsStorageIsRefused) {
  Module m("Net");
  m.register_parameter("weight", torch::randn({3, 4}), false);
  m.define("def forward(self, x):\n  return x.mm(self.weight)\n");
  // The size tuple (3, 4) as pickled: MARK, BININT1 3, BININT1 4, TUPLE; 3 becomes BININT2 300.
  const std::string path =
      saved_damaged(m, "damaged-size", "data.pkl", std::string("(K\x03K\x04t", 6), std::string("(M\x2c\x01K\x04t", 7));
  EXPECT_EQ(load_error(path),
            path + ": tensor weight of shape [300, 4] reaches 4800 bytes of a storage of 48: the archive is damaged");
}

TEST(Archive, InputsFromTheFlagOrTheArchivesPapayaJson) {
  Module m("Net");
  m.register_module("a", linear("Linear", 3, 3));
  m.define("def forward(self, x, mask):\n  return self.a.forward(x) * mask\n");
  const std::string path = saved(m, "inputs", {{"papaya.json", R"({"inputs": ["float32[B,3]", "float32[B,1]"]})"}});
  const Archive archive = load_archive(path);
  std::remove(path.c_str());
  EXPECT_EQ(forward_signature(archive), "forward(Tensor x, Tensor mask) -> Tensor");

  const auto from_json = input_specs(archive, {}, "--input");
  ASSERT_EQ(from_json.size(), 2u);
  EXPECT_EQ(from_json[1].shape(5), (std::vector<int64_t>{5, 1}));
  const auto given = input_specs(archive, {"float32[B,3]", "bfloat16[B,1]"}, "--input");
  EXPECT_EQ(given[1].dtype, "bfloat16");
  try {
    input_specs(archive, {"float32[B,3]"}, "--input");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": forward takes 2 input(s) (x, mask), --input gives 1");
  }

  Module counted("Net");
  counted.define("def forward(self, x, n: int):\n  return x * n\n");
  const std::string other = saved(counted, "int-argument", {{"papaya.json", R"({"inputs": ["float32[B,3]", "int64[B]"]})"}});
  const Archive with_int = load_archive(other);
  std::remove(other.c_str());
  try {
    input_specs(with_int, {}, "--input");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), other + ": forward's argument 'n' has type int, not Tensor: papaya feeds tensors only");
  }

  const std::string bad = saved(m, "bad-json", {{"papaya.json", R"({"inputs": ["float32[B,3]", 7]})"}});
  const Archive bad_json = load_archive(bad);
  std::remove(bad.c_str());
  try {
    input_specs(bad_json, {}, "--input");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(bad + ": papaya.json /inputs/1: expected a string", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace papaya::executor::torchscript
