#include "pipeline/profile_and_fit.h"

#include <utility>

#include "model/catalog/parameter_count.h"
#include "model/fit/fit_profile.h"
#include "model/fit/sequence_scaling.h"
#include "model/units.h"
#include "profiler/profiler.h"

namespace papaya::pipeline {

std::vector<int> default_profile_batches(const model::NetworkConfig& network) {
  const int s = network.smallest_batch();
  return {s, 2 * s, 4 * s};
}

namespace {

constexpr int longest_short_sequence = 64;

// What is slow to profile on the device: a CPU takes seconds a TFLOP and
// holds a few GiB; a GPU steps a PFLOP in seconds and holds tens of GiB.
struct SlowStep {
  double flops, attention_bytes;
};
SlowStep slow_step(const std::string& device) {
  if (device.rfind("cuda", 0) == 0) return {1e15, 16.0 * (1 << 30)};
  return {1e12, 1 << 30};
}

// The lengths to profile at (empty: the network's own); sets quick where
// the network is slow to step. Slow: over slow_step's FLOPs a step, or
// attention's token-by-token squares over its bytes (which grow past the
// device's memory long before the FLOPs are many).
std::vector<int> short_lengths(ProfileAndFitRequest& request, Reporter& reporter) {
  const model::NetworkConfig& config = request.network;
  const SlowStep slow = slow_step(request.device);
  const bool text = config.family == model::Family::gpt || config.family == model::Family::bert;
  const int tokens = config.sequence_length();
  const double batch = request.batches.back(), square = static_cast<double>(tokens) * tokens;
  // Forward and backward of the matrix products, two and four FLOPs per parameter and token.
  const double step_flops = 6.0 * static_cast<double>(model::parameter_count(config)) * tokens * batch;
  // Scores, probabilities and what dropout or the context keeps of them, fp32.
  const double attention_bytes = text ? 3.0 * 4 * square * config.transformer().heads * config.transformer().layers * batch : 0;
  if (step_flops <= slow.flops && attention_bytes <= slow.attention_bytes) return {};
  request.quick = true;
  if (!text || tokens <= longest_short_sequence) return {};
  reporter.notice("a step of " + config.name + " at " + std::to_string(tokens) + " tokens and batch " +
                  std::to_string(request.batches.back()) + " takes about " + model::format_si(step_flops) + "FLOP and " +
                  model::format_bytes(attention_bytes) + " of attention: profiling at 16, 32 and 64 tokens and modelling " +
                  std::to_string(tokens) + " from them");
  return {longest_short_sequence / 4, longest_short_sequence / 2, longest_short_sequence};
}

std::string join(const std::vector<int>& values) {
  std::string text;
  for (int v : values) text += (text.empty() ? "" : ", ") + std::to_string(v);
  return text;
}

std::vector<int> short_lengths_of(const std::vector<model::ModelAtLength>& models) {
  std::vector<int> lengths;
  for (const auto& m : models) lengths.push_back(m.seq_len);
  return lengths;
}

}  // namespace

Profiled profile_and_fit(const ProfileAndFitRequest& asked, Reporter& reporter) {
  ProfileAndFitRequest request = asked;
  if (request.batches.empty()) request.batches = default_profile_batches(request.network);
  const std::vector<int> lengths = short_lengths(request, reporter);
  profiler::ProfileOptions options;
  options.profile_blocks = request.profile_blocks;
  options.device = request.device;
  options.precision = request.precision;
  options.batches = request.batches;
  if (request.quick) {
    options.warmup = 1;
    options.steps = 2;
    options.rounds = 1;
    options.probe_batch = 0;
  }
  bool warned = false;  // the same warning at every length once
  options.on_warning = [&](const std::string& message) {
    if (!std::exchange(warned, true)) reporter.warning(message);
  };
  options.on_progress = [&](int done, int total, const std::string& note) { reporter.update(done, total, note); };
  std::vector<model::ModelAtLength> models;
  const auto profile_and_fit_one = [&](const model::NetworkConfig& network, int length) {
    options.network = network;
    reporter.begin(lengths.size() > 1 ? "profiling at " + std::to_string(length) + " tokens" : "profiling");
    const model::Profile profile = profiler::profile_network(options);
    reporter.begin("fitting");
    reporter.update(0, 1, "per-layer curves");
    models.push_back({length, model::fit_profile(profile, "profile of " + profile.network).model});
    reporter.update(1, 1);
    reporter.end();
  };
  if (lengths.empty()) profile_and_fit_one(request.network, 0);
  for (int length : lengths) profile_and_fit_one(model::at_seq_len(request.network, length), length);
  Profiled out;
  out.batches = options.batches;
  out.how = "at batches " + join(options.batches) +
            (models.size() > 1 ? " and " + join(short_lengths_of(models)) + " tokens" : "") + ", " +
            std::to_string(options.steps) + " steps each";
  out.model = models.size() > 1 ? model::at_sequence_length(models, request.network.sequence_length(),
                                                            "profiles of " + request.network.name)
                                : models.front().model;
  out.target = model::make_target(out.model, request.hardware);
  return out;
}

}  // namespace papaya::pipeline
