#include "executor/training_state.h"

#include <filesystem>

#include "executor/random_state.h"
#include "executor/storage/rounding.h"
#include "model/error.h"
#include "model/json_file.h"

namespace papaya::executor {
namespace {

// Of the "papaya" record; another is refused. 2: quantized tensors round
// with noise hashed from one seed per call (the rounding generator steps
// differently), so a format-1 state would not resume bit for bit.
constexpr int kFormat = 2;

using nlohmann::json;
using torch::serialize::InputArchive;
using torch::serialize::OutputArchive;

// Tensors go into the archive under their index in `names`, which the
// "papaya" record lists: a module path is no archive key.
template <typename Items>
json write_tensors(OutputArchive& archive, const std::string& key, const Items& items, bool buffers) {
  OutputArchive nested;
  json names = json::array();
  for (const auto& item : items) {
    nested.write(std::to_string(names.size()), item.value().detach(), buffers);
    names.push_back(item.key());
  }
  archive.write(key, nested);
  return names;
}

json adaptive_to_json(const AdaptiveBits::State& s) {
  return {{"estimating", s.estimating}, {"bits", s.bits}, {"sensitivity", s.sensitivity}, {"numel", s.numel}};
}

AdaptiveBits::State adaptive_from_json(const json& j) {
  return {j.at("estimating").get<bool>(), j.at("bits").get<std::vector<int>>(), j.at("sensitivity").get<std::vector<double>>(),
          j.at("numel").get<std::vector<int64_t>>()};
}

}  // namespace

void save_training_state(const std::string& path, const json& run, const TrainingProgress& progress, const TrainingParts& parts) {
  OutputArchive archive;
  json record = {{"format", kFormat}, {"run", run}, {"steps_done", progress.steps_done}, {"losses", progress.losses}};
  record["parameters"] = write_tensors(archive, "parameters", parts.network.named_parameters(), false);
  record["buffers"] = write_tensors(archive, "buffers", parts.network.named_buffers(), true);
  record["adaptive"] = json::array();
  for (const auto& controller : parts.applied.adaptive()) record["adaptive"].push_back(adaptive_to_json(controller->state()));
  archive.write("papaya", c10::IValue(record.dump()));

  OutputArchive optimizer;
  parts.optimizer.save(optimizer);
  archive.write("optimizer", optimizer);

  const RandomState random = RandomState::capture(parts.network.parameters().front().device());
  archive.write("random_default_cpu", random.cpu);
  if (random.cuda.defined()) archive.write("random_default_cuda", random.cuda);
  archive.write("random_rounding", generator_state(rounding_generator()));
  archive.write("random_data", parts.data.position());

  model::write_file_atomically(path, [&](const std::string& temporary) {
    try {
      archive.save_to(temporary);
    } catch (const c10::Error& e) {
      throw InputError(path + ": cannot write (" + e.what_without_backtrace() + ")");
    }
  });
}

TrainingState TrainingState::read(const std::string& path, const torch::Device& device) {
  if (!std::filesystem::is_regular_file(path)) throw InputError(path + ": no such file");
  TrainingState state;
  state.path_ = path;
  state.archive_ = std::make_shared<InputArchive>();
  c10::IValue record;
  try {
    state.archive_->load_from(path, device);
    state.archive_->read("papaya", record);
  } catch (const c10::Error&) {
    throw InputError(path + ": not a papaya training state (unreadable or damaged)");
  }
  try {
    const json doc = json::parse(record.toStringRef());
    if (doc.at("format").get<int>() != kFormat) {
      throw InputError(path + ": training state format " + doc.at("format").dump() + ", this papaya reads " +
                       std::to_string(kFormat));
    }
    state.run_ = doc.at("run");
    state.progress_ = {doc.at("steps_done").get<int>(), doc.at("losses").get<std::vector<double>>()};
    state.record_ = doc;
  } catch (const json::exception& e) {
    throw InputError(path + ": damaged training state (" + e.what() + ")");
  }
  return state;
}

void TrainingState::restore(const TrainingParts& parts) const {
  const std::string where = path_ + ": ";
  const auto restore_tensors = [&](const std::string& key, const auto& items) {
    const std::vector<std::string> names = record_.at(key).get<std::vector<std::string>>();
    if (names.size() != items.size()) {
      throw InputError(where + std::to_string(names.size()) + " " + key + ", the network has " + std::to_string(items.size()) +
                       " (a state of another network)");
    }
    InputArchive nested;
    archive_->read(key, nested);
    const torch::NoGradGuard no_grad;
    for (size_t i = 0; i < names.size(); ++i) {
      const auto& item = items[i];
      torch::Tensor saved;
      nested.read(std::to_string(i), saved);
      if (names[i] != item.key() || saved.sizes() != item.value().sizes() || saved.scalar_type() != item.value().scalar_type()) {
        throw InputError(where + "its " + key + " are not this network's: '" + names[i] + "' " + c10::str(saved.sizes()) +
                         " where the network has '" + item.key() + "' " + c10::str(item.value().sizes()));
      }
      item.value().copy_(saved);
    }
  };
  try {
    restore_tensors("parameters", parts.network.named_parameters());
    restore_tensors("buffers", parts.network.named_buffers());

    const json& adaptive = record_.at("adaptive");
    if (adaptive.size() != parts.applied.adaptive().size()) {
      throw InputError(where + std::to_string(adaptive.size()) + " adaptive controllers, the plan has " +
                       std::to_string(parts.applied.adaptive().size()));
    }
    for (size_t i = 0; i < adaptive.size(); ++i) parts.applied.adaptive()[i]->restore(adaptive_from_json(adaptive[i]));

    InputArchive optimizer;
    archive_->read("optimizer", optimizer);
    parts.optimizer.load(optimizer);

    RandomState random = RandomState::capture(parts.network.parameters().front().device());
    torch::Tensor tensor;
    archive_->read("random_default_cpu", tensor);
    random.cpu = tensor.cpu();
    if (random.cuda.defined()) {
      archive_->read("random_default_cuda", tensor);
      random.cuda = tensor.cpu();
    }
    random.restore();
    archive_->read("random_rounding", tensor);
    set_generator_state(rounding_generator(), tensor.cpu());
    archive_->read("random_data", tensor);
    parts.data.seek(tensor.cpu());
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    throw InputError(where + "damaged or another run's training state (" + what.substr(0, what.find('\n')) + ")");
  } catch (const json::exception& e) {
    throw InputError(where + "damaged training state (" + e.what() + ")");
  }
}

}  // namespace papaya::executor
