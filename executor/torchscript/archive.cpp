#include "executor/torchscript/archive.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "executor/torchscript/load_apart.h"
#include "model/error.h"

namespace papaya::executor::torchscript {
namespace {

constexpr char kExtraFile[] = "papaya.json";

// papaya.json's specs, checked: {"inputs": ["float32[B,3,64,64]", ...]}.
std::vector<model::InputSpec> specs_from_json(const Archive& archive) {
  const std::string where = archive.path + ": " + kExtraFile;
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(*archive.papaya_json);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(where + ": not JSON (" + e.what() + ")");
  }
  if (!doc.is_object()) throw InputError(where + ": expected an object {\"inputs\": [...]}");
  for (const auto& [key, value] : doc.items()) {
    if (key != "inputs") throw InputError(where + ": /" + key + ": unknown key (papaya.json holds \"inputs\")");
  }
  if (!doc.contains("inputs") || !doc.at("inputs").is_array()) {
    throw InputError(where + ": /inputs: expected an array of specs such as \"float32[B,3,224,224]\"");
  }
  std::vector<model::InputSpec> specs;
  const auto& inputs = doc.at("inputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string at = where + " /inputs/" + std::to_string(i);
    if (!inputs[i].is_string()) throw InputError(at + ": expected a string such as \"float32[B,3,224,224]\"");
    specs.push_back(model::parse_input_spec(inputs[i].get<std::string>(), at));
  }
  return specs;
}

// The bytes `t`'s sizes and strides reach into its storage.
int64_t reached_bytes(const torch::Tensor& t) {
  if (t.numel() == 0) return 0;
  int64_t last = t.storage_offset();
  for (int64_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
  return (last + 1) * static_cast<int64_t>(t.element_size());
}

// LibTorch 1.13 loads a tensor whose sizes claim more than its storage holds
// (a damaged size in the pickle), and reads past the storage when it runs:
// every tensor the module holds is checked against its storage here.
void check_tensors_fit_storage(const Archive& archive) {
  for (const auto& attribute : archive.module.named_attributes(/*recurse=*/true)) {
    if (!attribute.value.isTensor()) continue;
    const torch::Tensor t = attribute.value.toTensor();
    if (!t.defined() || !t.has_storage()) continue;
    const int64_t holds = static_cast<int64_t>(t.storage().nbytes()), reached = reached_bytes(t);
    bool negative = t.storage_offset() < 0;
    for (int64_t d = 0; d < t.dim(); ++d) negative = negative || t.stride(d) < 0;
    if (negative || reached > holds) {
      throw InputError(archive.path + ": tensor " + attribute.name + " of shape " + c10::str(t.sizes()) + " reaches " +
                       std::to_string(reached) + " bytes of a storage of " + std::to_string(holds) + ": the archive is damaged");
    }
  }
}

}  // namespace

bool looks_like_archive(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && magic[0] == 'P' && magic[1] == 'K' && magic[2] == 3 && magic[3] == 4;
}

Archive load_archive(const std::string& path) {
  if (!std::ifstream(path)) throw InputError(path + ": cannot read the file");
  if (!looks_like_archive(path)) throw InputError(path + ": not a TorchScript archive (no zip header)");
  torch::jit::ExtraFilesMap extra{{kExtraFile, ""}};
  Archive archive{path, load_module(path, extra), std::nullopt};
  if (!extra.at(kExtraFile).empty()) archive.papaya_json = extra.at(kExtraFile);
  if (!archive.module.find_method("forward")) throw InputError(path + ": the module has no forward method");
  check_tensors_fit_storage(archive);
  return archive;
}

std::vector<ForwardArgument> forward_arguments(const Archive& archive) {
  std::vector<ForwardArgument> out;
  const auto& arguments = archive.module.get_method("forward").function().getSchema().arguments();
  for (size_t i = 1; i < arguments.size(); ++i) {  // after self
    const auto& a = arguments[i];
    out.push_back({a.name(), a.type()->annotation_str(), a.type()->kind() == c10::TypeKind::TensorType});
  }
  return out;
}

std::string forward_signature(const Archive& archive) {
  const auto& schema = archive.module.get_method("forward").function().getSchema();
  std::string out = "forward(";
  for (const auto& a : forward_arguments(archive)) out += (out.back() == '(' ? "" : ", ") + a.type + " " + a.name;
  out += ") -> ";
  const auto& returns = schema.returns();
  for (size_t i = 0; i < returns.size(); ++i) out += (i ? ", " : "") + returns[i].type()->annotation_str();
  return out;
}

std::vector<model::InputSpec> input_specs(const Archive& archive, const std::vector<std::string>& given,
                                          const std::string& given_as) {
  std::vector<model::InputSpec> specs;
  std::string source;
  if (!given.empty()) {
    source = given_as;
    for (const auto& text : given) specs.push_back(model::parse_input_spec(text, given_as));
  } else if (archive.papaya_json) {
    source = std::string(kExtraFile) + " /inputs";
    specs = specs_from_json(archive);
  } else {
    return specs;
  }
  const auto arguments = forward_arguments(archive);
  if (specs.size() != arguments.size()) {
    std::string names;
    for (const auto& a : arguments) names += (names.empty() ? "" : ", ") + a.name;
    throw InputError(archive.path + ": forward takes " + std::to_string(arguments.size()) + " input(s) (" + names + "), " +
                     source + " gives " + std::to_string(specs.size()));
  }
  for (const auto& a : arguments) {
    if (!a.tensor) {
      throw InputError(archive.path + ": forward's argument '" + a.name + "' has type " + a.type +
                       ", not Tensor: papaya feeds tensors only");
    }
  }
  return specs;
}

}  // namespace papaya::executor::torchscript
