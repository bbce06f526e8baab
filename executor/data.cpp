#include "executor/data.h"

#include <ATen/CPUGeneratorImpl.h>

#include <fstream>
#include <set>
#include <sstream>

#include "executor/random_state.h"
#include "executor/torchscript/recorded_batches.h"
#include "executor/torchscript/synthetic_data.h"
#include "model/catalog/input_spec.h"
#include "model/error.h"

namespace papaya::executor {
namespace {

using model::Family;

class SyntheticData : public DataSource {
 public:
  SyntheticData(const model::NetworkConfig& config, torch::Device device, uint64_t seed)
      : config_(config), device_(device), gen_(at::detail::createCPUGenerator(seed)) {
    if (config.family == Family::gpt) {
      permutation_ = torch::randperm(config.transformer().vocab, gen_, torch::kLong);
    } else if (config.family != Family::bert) {
      // Images: a colour per class (easy to pick up through any pooling) plus
      // a fainter pattern per class.
      const auto shape = template_shape();
      templates_ = torch::randn(shape, gen_);
      if (shape.size() == 4) {
        templates_ = torch::randn({shape[0], shape[1], 1, 1}, gen_) + 0.5 * templates_;
      }
    }
  }

  Batch next(int64_t b) override {
    Batch batch;
    switch (config_.family) {
      case Family::gpt: batch = permutation_sequences(b); break;
      case Family::bert: {
        const auto& t = config_.transformer();
        batch.input = torch::randint(t.vocab, {b, t.seq_len}, gen_, torch::kLong);
        batch.target = batch.input.select(1, 1).remainder(t.classes);
        break;
      }
      case Family::vit:
      case Family::resnet:
      case Family::mlp: {
        batch.target = torch::randint(templates_.size(0), {b}, gen_, torch::kLong);
        batch.input = templates_.index_select(0, batch.target) + torch::randn(input_shape(b), gen_);
        break;
      }
      case Family::torchscript: TORCH_CHECK(false, "a TorchScript network's data is ArchiveData's");
    }
    return {batch.input.to(device_), batch.target.to(device_), {}};
  }

  std::string describe() const override {
    switch (config_.family) {
      case Family::gpt: return "synthetic sequences (a fixed permutation of the vocabulary, 10% noise)";
      case Family::bert: return "synthetic token sequences (class = second token mod classes)";
      case Family::vit:
      case Family::resnet:
      case Family::mlp: return "synthetic inputs (a template per class plus unit noise)";
      case Family::torchscript: break;
    }
    TORCH_CHECK(false, "unknown network family");
  }

  torch::Tensor position() const override { return generator_state(gen_); }
  void seek(const torch::Tensor& position) override { set_generator_state(gen_, position); }

 private:
  Batch permutation_sequences(int64_t b) {
    const auto& t = config_.transformer();
    std::vector<torch::Tensor> tokens{torch::randint(t.vocab, {b}, gen_, torch::kLong)};
    for (int i = 0; i < t.seq_len; ++i) {
      const torch::Tensor follow = permutation_.index_select(0, tokens.back());
      const torch::Tensor noise = torch::randint(t.vocab, {b}, gen_, torch::kLong);
      const torch::Tensor keep = torch::rand({b}, gen_) < 0.9;
      tokens.push_back(torch::where(keep, follow, noise));
    }
    const torch::Tensor seq = torch::stack(tokens, 1);
    return {seq.narrow(1, 0, t.seq_len), seq.narrow(1, 1, t.seq_len)};
  }

  std::vector<int64_t> input_shape(int64_t b) const {
    std::vector<int64_t> shape = template_shape();
    shape[0] = b;
    return shape;
  }

  std::vector<int64_t> template_shape() const {
    if (config_.family == Family::mlp) return {config_.mlp().classes, config_.mlp().input};
    if (config_.family == Family::resnet) {
      const auto& r = config_.resnet();
      return {r.classes, r.channels, r.image_size, r.image_size};
    }
    const auto& t = config_.transformer();
    return {t.classes, t.channels, t.image_size, t.image_size};
  }

  model::NetworkConfig config_;
  torch::Device device_;
  at::Generator gen_;
  torch::Tensor permutation_, templates_;
};

class TextData : public DataSource {
 public:
  TextData(const std::string& path, const model::NetworkConfig& config, torch::Device device, uint64_t seed)
      : path_(path), seq_len_(config.transformer().seq_len), device_(device), gen_(at::detail::createCPUGenerator(seed)) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError("data file " + path + ": cannot read the file");
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string text = buffer.str();
    if (static_cast<int64_t>(text.size()) <= seq_len_) {
      throw InputError("data file " + path + ": " + std::to_string(text.size()) + " characters, fewer than one window of " +
                       std::to_string(seq_len_ + 1));
    }
    const std::set<unsigned char> chars(text.begin(), text.end());
    if (static_cast<int>(chars.size()) > config.transformer().vocab) {
      throw InputError("data file " + path + ": " + std::to_string(chars.size()) +
                       " distinct characters, more than the vocabulary of " + config.name + " (" +
                       std::to_string(config.transformer().vocab) + ")");
    }
    std::vector<int64_t> id(256, 0);
    int64_t next = 0;
    for (unsigned char c : chars) id[c] = next++;
    distinct_ = next;
    tokens_ = torch::empty({static_cast<int64_t>(text.size())}, torch::kLong);
    auto* out = tokens_.data_ptr<int64_t>();
    for (size_t i = 0; i < text.size(); ++i) out[i] = id[static_cast<unsigned char>(text[i])];
  }

  Batch next(int64_t b) override {
    const int64_t windows = tokens_.size(0) - seq_len_;
    const torch::Tensor start = torch::randint(windows, {b, 1}, gen_, torch::kLong);
    const torch::Tensor index = start + torch::arange(seq_len_ + 1, torch::kLong);
    const torch::Tensor seq = tokens_.index_select(0, index.flatten()).view({b, seq_len_ + 1});
    return {seq.narrow(1, 0, seq_len_).to(device_), seq.narrow(1, 1, seq_len_).to(device_)};
  }

  std::string describe() const override {
    return path_ + " (" + std::to_string(tokens_.size(0)) + " characters, " + std::to_string(distinct_) + " distinct)";
  }

  torch::Tensor position() const override { return generator_state(gen_); }
  void seek(const torch::Tensor& position) override { set_generator_state(gen_, position); }

 private:
  std::string path_;
  int64_t seq_len_;
  torch::Device device_;
  at::Generator gen_;
  torch::Tensor tokens_;
  int64_t distinct_ = 0;
};

// A TorchScript network's inputs (model::TorchScriptConfig).
std::vector<model::InputSpec> specs_of(const model::NetworkConfig& config) {
  std::vector<model::InputSpec> specs;
  for (const auto& text : config.torchscript().inputs) specs.push_back(model::parse_input_spec(text, config.name + ": input"));
  return specs;
}

// A TorchScript network's inputs drawn from their specs, in the forward's order.
class ArchiveData : public DataSource {
 public:
  ArchiveData(const model::NetworkConfig& config, torch::Device device, uint64_t seed)
      : specs_(specs_of(config)), device_(device), gen_(at::detail::createCPUGenerator(seed)) {}

  Batch next(int64_t batch_size) override {
    Batch batch;
    for (const auto& input : torchscript::synthetic_inputs(specs_, batch_size, gen_))
      batch.arguments.push_back(input.toTensor().to(device_));
    batch.input = batch.arguments.front();
    return batch;
  }
  std::string describe() const override {
    std::string specs;
    for (const auto& s : specs_) specs += (specs.empty() ? "" : ", ") + s.text();
    return "synthetic inputs drawn from their specs (" + specs + ")";
  }
  torch::Tensor position() const override { return generator_state(gen_); }
  void seek(const torch::Tensor& position) override { set_generator_state(gen_, position); }

 private:
  std::vector<model::InputSpec> specs_;
  torch::Device device_;
  at::Generator gen_;
};

// A TorchScript network's batches read from a file (torchscript::RecordedBatches):
// `b` rows at a time from where the last batch ended, wrapping around.
class RecordedData : public DataSource {
 public:
  RecordedData(const std::string& path, const model::NetworkConfig& config, torch::Device device)
      : path_(path), recorded_(torchscript::load_recorded_batches(path, specs_of(config))), device_(device) {}

  Batch next(int64_t b) override {
    const torch::Tensor rows = (torch::arange(b, torch::kLong) + next_row_).remainder(recorded_.rows);
    next_row_ = (next_row_ + b) % recorded_.rows;
    Batch batch;
    for (const auto& argument : recorded_.arguments) batch.arguments.push_back(argument.index_select(0, rows).to(device_));
    batch.input = batch.arguments.front();
    if (recorded_.target.defined()) batch.target = recorded_.target.index_select(0, rows).to(device_);
    return batch;
  }
  std::string describe() const override {
    return path_ + " (" + std::to_string(recorded_.batches) + " batches, " + std::to_string(recorded_.rows) + " rows" +
           (recorded_.target.defined() ? ", with targets)" : ")");
  }
  torch::Tensor position() const override { return torch::tensor({next_row_}, torch::kLong); }
  void seek(const torch::Tensor& position) override { next_row_ = position.item<int64_t>() % recorded_.rows; }

 private:
  std::string path_;
  torchscript::RecordedBatches recorded_;
  torch::Device device_;
  int64_t next_row_ = 0;
};

}  // namespace

std::unique_ptr<DataSource> make_synthetic_data(const model::NetworkConfig& config, torch::Device device, uint64_t seed) {
  if (config.family == Family::torchscript) return std::make_unique<ArchiveData>(config, device, seed);
  return std::make_unique<SyntheticData>(config, device, seed);
}

std::unique_ptr<DataSource> make_file_data(const std::string& path, const model::NetworkConfig& config, torch::Device device,
                                           uint64_t seed) {
  if (config.family == Family::torchscript) return std::make_unique<RecordedData>(path, config, device);
  if (config.family != Family::gpt) {
    throw InputError(
        "a data file trains a gpt network as a character-level language model, or a TorchScript network on "
        "its recorded batches; " +
        config.name + " is a " + model::to_string(config.family) + " network");
  }
  return std::make_unique<TextData>(path, config, device, seed);
}

}  // namespace papaya::executor
