#include "executor/torchscript/recorded_batches.h"

#include <torch/serialize.h>

#include <fstream>
#include <iterator>

#include "executor/torchscript/synthetic_data.h"
#include "model/error.h"

namespace papaya::executor::torchscript {
namespace {

std::vector<torch::IValue> elements(const torch::IValue& v) {
  if (v.isTuple()) return v.toTupleRef().elements().vec();
  if (v.isList()) return v.toListRef().vec();
  return {v};
}

// The batch's tensors: a bare tensor, or a tuple or list of them.
std::vector<at::Tensor> batch_tensors(const torch::IValue& batch, const std::string& where) {
  std::vector<at::Tensor> tensors;
  for (const auto& e : elements(batch)) {
    if (!e.isTensor()) throw InputError(where + ": holds a " + e.tagKind() + "; a batch holds tensors only");
    tensors.push_back(e.toTensor());
  }
  return tensors;
}

void check_argument(const at::Tensor& t, const model::InputSpec& spec, const std::string& where) {
  if (spec.dims.front())
    throw InputError(where + ": the input spec " + spec.text() + " needs its batch B first to be read from data");
  bool same = t.scalar_type() == scalar_type(spec) && t.dim() == static_cast<int64_t>(spec.dims.size());
  for (size_t d = 0; same && d < spec.dims.size(); ++d) same = !spec.dims[d] || t.size(d) == *spec.dims[d];
  if (!same) {
    throw InputError(where + ": " + std::string(c10::toString(t.scalar_type())) + shape_text(t) + ", the forward's is " +
                     spec.text());
  }
  if (spec.below && t.numel() > 0) {
    const auto [low, high] = at::aminmax(t);
    if (low.item<int64_t>() < 0 || high.item<int64_t>() >= *spec.below) {
      throw InputError(where + ": values span [" + std::to_string(low.item<int64_t>()) + ", " +
                       std::to_string(high.item<int64_t>()) + "], outside [0, " + std::to_string(*spec.below) + ") of " +
                       spec.text());
    }
  }
}

}  // namespace

RecordedBatches load_recorded_batches(const std::string& path, const std::vector<model::InputSpec>& specs) {
  if (specs.empty()) throw InputError("data file " + path + ": the forward takes no tensor to read from it");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("data file " + path + ": cannot read the file");
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  torch::IValue file;
  try {
    file = torch::pickle_load(bytes);
  } catch (const c10::Error& e) {
    throw InputError("data file " + path + ": not a file torch.save wrote (" + e.what_without_backtrace() + ")");
  }
  if (!file.isList() && !file.isTuple()) {
    throw InputError("data file " + path + ": holds a " + file.tagKind() + ", not a list of batches");
  }
  const auto batches = elements(file);
  if (batches.empty()) throw InputError("data file " + path + ": holds no batch");

  std::vector<std::vector<at::Tensor>> columns(specs.size() + 1);
  bool with_target = false;
  for (size_t b = 0; b < batches.size(); ++b) {
    const std::string where = "data file " + path + ": batch " + std::to_string(b);
    const auto tensors = batch_tensors(batches[b], where);
    if (tensors.size() != specs.size() && tensors.size() != specs.size() + 1) {
      throw InputError(where + ": " + std::to_string(tensors.size()) + " tensors; the forward takes " +
                       std::to_string(specs.size()) + " (and a target may follow)");
    }
    if (b == 0) with_target = tensors.size() > specs.size();
    if (with_target != (tensors.size() > specs.size())) {
      throw InputError(where + ": " + (with_target ? "no target, where batch 0 has one" : "a target, where batch 0 has none"));
    }
    for (size_t i = 0; i < specs.size(); ++i) {
      check_argument(tensors[i], specs[i], where + ", argument " + std::to_string(i));
      if (tensors[i].size(0) != tensors[0].size(0)) {
        throw InputError(where + ", argument " + std::to_string(i) + ": " + std::to_string(tensors[i].size(0)) +
                         " rows, argument 0 has " + std::to_string(tensors[0].size(0)));
      }
    }
    if (with_target && (tensors.back().dim() == 0 || tensors.back().size(0) != tensors[0].size(0))) {
      throw InputError(where + ", target: " + shape_text(tensors.back()) + ", not one row for each of the batch's " +
                       std::to_string(tensors[0].size(0)));
    }
    for (size_t i = 0; i < tensors.size(); ++i) columns[i].push_back(tensors[i].contiguous());
  }

  RecordedBatches recorded;
  recorded.batches = static_cast<int64_t>(batches.size());
  for (size_t i = 0; i < specs.size(); ++i) recorded.arguments.push_back(at::cat(columns[i]));
  if (with_target) recorded.target = at::cat(columns.back());
  recorded.rows = recorded.arguments.empty() ? 0 : recorded.arguments.front().size(0);
  if (recorded.rows == 0) throw InputError("data file " + path + ": its batches hold no rows");
  return recorded;
}

}  // namespace papaya::executor::torchscript
