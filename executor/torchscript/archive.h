#pragma once
// A user's network as a TorchScript archive (torch.jit.save of a scripted or
// traced module): loaded, with the inputs its forward takes. Recognised by
// content (a zip archive TorchScript can load), not by extension.
#include <torch/script.h>

#include <optional>
#include <string>
#include <vector>

#include "model/catalog/input_spec.h"

namespace papaya::executor::torchscript {

struct Archive {
  std::string path;
  torch::jit::Module module;
  // The archive's extra file papaya.json (torch.jit.save(m, f,
  // _extra_files={"papaya.json": ...})), where it has one.
  std::optional<std::string> papaya_json;
};

// Whether the file starts as a zip archive does: a TorchScript archive, or
// nothing papaya reads as a network config.
bool looks_like_archive(const std::string& path);

// InputError naming the file where it cannot be read or is not TorchScript.
Archive load_archive(const std::string& path);

// One forward argument after self: its name and TorchScript type.
struct ForwardArgument {
  std::string name, type;
  bool tensor = false;
};
std::vector<ForwardArgument> forward_arguments(const Archive& archive);
std::string forward_signature(const Archive& archive);  // "forward(Tensor x, Tensor mask) -> Tensor"

// The specs of the forward's inputs, in order: `given` where there are any
// (`given_as` names where they came from in errors), else papaya.json's
// "inputs", else none. InputError where they do not match the forward's
// arguments (count, a non-tensor argument) or do not parse, naming where
// they came from.
std::vector<model::InputSpec> input_specs(const Archive& archive, const std::vector<std::string>& given,
                                          const std::string& given_as);

}  // namespace papaya::executor::torchscript
