#include "cli/auto_plan.h"

#include <iostream>
#include <utility>

#include "cli/progress.h"
#include "model/fit/fit_profile.h"
#include "model/catalog/network_config.h"
#include "model/catalog/parameter_count.h"
#include "model/fit/sequence_scaling.h"
#include "model/units.h"
#include "profiler/profiler.h"

namespace papaya::cli {

const std::vector<int>& auto_plan_batches() {
  static const std::vector<int> batches = {1, 2, 4};
  return batches;
}

namespace {

constexpr double slow_step_flops = 1e12;
constexpr double large_attention_bytes = 1 << 30;
constexpr int longest_short_sequence = 64;

// The lengths to profile at (empty: the network's own); sets quick where
// the network is slow to step. Slow: over a TFLOP a step, or attention's
// token-by-token squares over a GiB (which grow past this machine's memory
// long before the FLOPs are many).
std::vector<int> short_lengths(AutoPlanRequest& request) {
  const model::NetworkConfig config = model::load_network_config(request.network, request.seq_len);
  const bool text = config.family == model::Family::gpt || config.family == model::Family::bert;
  const int tokens = config.sequence_length();
  const double batch = request.batches.back(), square = static_cast<double>(tokens) * tokens;
  // Forward and backward of the matrix products, two and four FLOPs per parameter and token.
  const double step_flops = 6.0 * static_cast<double>(model::parameter_count(config)) * tokens * batch;
  // Scores, probabilities and what dropout or the context keeps of them, fp32.
  const double attention_bytes = text ? 3.0 * 4 * square * config.transformer().heads * config.transformer().layers * batch : 0;
  if (step_flops <= slow_step_flops && attention_bytes <= large_attention_bytes) return {};
  request.quick = true;
  if (!text || tokens <= longest_short_sequence) return {};
  std::cerr << "papaya: a step of " << config.name << " at " << tokens << " tokens and batch " << request.batches.back()
            << " takes about " << model::format_si(step_flops) << "FLOP and " << model::format_bytes(attention_bytes)
            << " of attention: profiling at 16, 32 and 64 tokens and modelling " << tokens << " from them\n";
  request.seq_len = tokens;
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

Profiled profile_and_fit(const AutoPlanRequest& asked) {
  AutoPlanRequest request = asked;
  std::vector<std::optional<int>> lengths;
  for (int length : short_lengths(request)) lengths.push_back(length);
  if (lengths.empty()) lengths.push_back(request.seq_len);
  profiler::ProfileOptions options;
  options.network = request.network;
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
  options.on_warning = [&warned](const std::string& message) {
    if (!std::exchange(warned, true)) std::cerr << "papaya: warning: " << message << "\n";
  };
  std::vector<model::ModelAtLength> models;
  for (const auto& length : lengths) {
    options.seq_len = length;
    model::Profile profile;
    {
      Progress progress(lengths.size() > 1 ? "profiling at " + std::to_string(*length) + " tokens" : "profiling");
      options.on_progress = [&](int done, int total, const std::string& note) { progress.update(done, total, note); };
      profile = profiler::profile_network(options);
    }
    Progress progress("fitting");
    progress.update(0, 1, "per-layer curves");
    models.push_back({length.value_or(0), model::fit_profile(profile, "profile of " + profile.network).model});
    progress.update(1, 1);
  }
  Profiled out;
  out.how = "at batches " + join(options.batches) +
            (models.size() > 1 ? " and " + join(short_lengths_of(models)) + " tokens" : "") + ", " +
            std::to_string(options.steps) + " steps each";
  out.model = models.size() > 1 ? model::at_sequence_length(models, *request.seq_len, "profiles of " + request.network)
                                : models.front().model;
  out.target = model::make_target(out.model, request.hardware);
  return out;
}

planner::PlanResult plan_with_progress(const Profiled& profiled, const planner::PlanRequest& request,
                                       const std::vector<int>& zero_stages) {
  Progress progress("planning");
  progress.update(0, 1, "whole-network combinations and the per-layer search");
  planner::PlanResult result = planner::make_plan_choosing_stage(profiled.model, profiled.target, request, zero_stages);
  progress.update(1, 1);
  return result;
}

}  // namespace papaya::cli
