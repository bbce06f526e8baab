#include "workflow/profile_and_fit.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "model/alike_experts.h"
#include "model/catalog/hardware.h"
#include "model/catalog/parameter_count.h"
#include "model/catalog/shape_fraction.h"
#include "model/error.h"
#include "model/fit/fit_profile.h"
#include "model/fit/plan_step_calibration.h"
#include "model/fit/sequence_scaling.h"
#include "model/fit/shape_scaling.h"
#include "model/units.h"
#include "profiler/profiler.h"

namespace papaya::workflow {

std::vector<int> default_profile_batches(const model::NetworkConfig& network) {
  const int s = network.smallest_batch();
  return {s, 2 * s, 4 * s};
}

namespace {

constexpr int longest_short_sequence = 64;
// A fraction of a network's shape profiles quickly where its widest step
// takes this share of a slow step (slow_step): a few seconds.
constexpr double quick_share = 1.0 / 50;

// An answer asked for quickly (limits: memory priced on other hardware) is
// slow already where a step takes this share of a slow step (seconds on a
// CPU): profiling the whole network at its shape would take minutes.
constexpr double quick_answer_share = 1.0 / 10;

// What is slow to profile on the device: a CPU takes seconds a TFLOP and
// holds a few GiB; a GPU steps a PFLOP in seconds and holds tens of GiB.
struct StepSize {
  double flops, attention_bytes;
};
StepSize slow_step(const std::string& device) {
  if (device.rfind("cuda", 0) == 0) return {1e15, 16.0 * (1 << 30)};
  return {1e12, 1 << 30};
}

bool text(const model::NetworkConfig& config) {
  return config.family == model::Family::gpt || config.family == model::Family::bert;
}

// Whether attention keeps token-by-token tensors: materialized in a text
// network (a ViT's patches are few).
bool squares(const model::NetworkConfig& config) { return text(config) && !config.transformer().fused_attention(); }

// A step of `config` at `batch`: the matrix products' forward and backward
// (two and four FLOPs per parameter and token), and materialized attention's
// scores, probabilities and what dropout or the context keeps of them
// (fp32), which grow past the device's memory long before the FLOPs are many
// (fused attention keeps none).
StepSize step_size(const model::NetworkConfig& config, int batch) {
  const double tokens = config.sequence_length(), square = tokens * tokens;
  return {6.0 * static_cast<double>(model::parameter_count(config)) * tokens * batch,
          squares(config) ? 3.0 * 4 * square * config.transformer().heads * config.transformer().layers * batch : 0};
}

bool within(const StepSize& step, const StepSize& bound, double share) {
  return step.flops <= bound.flops * share && step.attention_bytes <= bound.attention_bytes * share;
}

// How a network is profiled: at fractions of its shape, at short lengths, or
// as it is (neither).
struct Scaling {
  int parts = 0;  // the fractions 1/parts, 2/parts, 3/parts
  model::ShapeCut cut = model::ShapeCut::tokens_and_widths;
  int blocks = 0;            // with parts: the blocks profiled (0: the profiler's choice)
  std::vector<int> lengths;  // short lengths to model the network's from
};

model::NetworkConfig fraction(const model::NetworkConfig& config, int k, int parts, model::ShapeCut cut, int blocks) {
  const model::NetworkConfig narrow = model::at_shape_fraction(config, k, parts, cut);
  return blocks > 0 ? model::with_blocks(narrow, blocks) : narrow;
}

// Tokens and widths where that routes experts shares in proportion to the
// fraction, else (and for a ViT, whose patches are its image's) widths.
model::ShapeCut cut_for(const model::NetworkConfig& config, int parts) {
  return text(config) && model::routes_tokens_in_proportion(config, parts) ? model::ShapeCut::tokens_and_widths
                                                                           : model::ShapeCut::widths;
}

// The most parts a network is cut into: as many as its shape divides into,
// its smallest fraction holding min_fraction_tokens or more (a step of a
// few tokens of a few values each runs other kernels, whose scratch is no
// polynomial of the shape: 4 tokens of Llama-2-7B's shape put its
// projections' peaks 0.7 % off) and routing its experts shares in
// proportion to it.
constexpr int min_fraction_tokens = 16;
int most_parts(const model::NetworkConfig& config, model::ShapeCut cut) {
  int most = model::shape_parts_limit(config, cut);
  while (cut == model::ShapeCut::tokens_and_widths && most > 1 &&
         (config.sequence_length() / most < min_fraction_tokens || !model::routes_tokens_in_proportion(config, most))) {
    most /= 2;
  }
  return most;
}

// The fewest parts (4 at least: three fractions and the whole) whose widest
// fraction profiles quickly, or the most; 0 where the network is not cut
// into 4.
int quick_parts(const model::NetworkConfig& config, model::ShapeCut cut, int blocks, int batch, const StepSize& slow) {
  const int most = most_parts(config, cut);
  if (most < 4) return 0;
  int parts = 4;
  while (parts < most && !within(step_size(fraction(config, 3, parts, cut, blocks), batch), slow, quick_share)) parts *= 2;
  return parts;
}

// Whether the network is slow for its sequence alone: at the longest short
// length it steps quickly (then that length is the quicker cut).
bool short_lengths_quick(const ProfileAndFitRequest& request, int batch, const StepSize& slow) {
  const model::NetworkConfig& config = request.network;
  if (!text(config) || config.sequence_length() <= longest_short_sequence) return false;
  const model::NetworkConfig shorter = model::at_seq_len(config, longest_short_sequence);
  const int blocks = request.profile_blocks;
  return within(step_size(blocks > 0 ? model::with_blocks(shorter, blocks) : shorter, batch), slow, quick_share);
}

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<size_t>(i), ",");
  return digits;
}

// The sizes `parts` does not divide, as the network modelled has them, and
// its experts' routings where they are shared out per a fraction's.
std::string as_modelled(const model::NetworkConfig& config, int parts, model::ShapeCut cut) {
  const model::TransformerConfig& t = config.transformer();
  const model::TransformerConfig whole = model::at_shape_fraction(config, parts, parts, cut).transformer();
  std::string out;
  const auto note = [&](const std::string& name, int64_t was, int64_t is) {
    if (was != is) out += (out.empty() ? "" : ", ") + name + " " + with_commas(was) + " as " + with_commas(is);
  };
  note("vocabulary", t.vocab, whole.vocab);
  note("MLP width", t.mlp_hidden(), whole.mlp_hidden());
  if (t.moe) {
    note("experts' width", t.moe->expert_hidden, whole.moe->expert_hidden);
    note("shared expert's width", t.moe->shared_hidden, whole.moe->shared_hidden);
  }
  std::string routing;
  if (whole.moe && whole.moe->routing_unit > 0 && whole.moe->routing_unit % whole.moe->experts != 0) {
    routing = "; its experts' routings shared out " + with_commas(whole.moe->routing_unit) + " at a time, as the " +
              "smallest fraction's, so that each expert's grows with the tokens";
  }
  return (out.empty() ? "" : " (modelled with its " + out + ", multiples of " + std::to_string(parts) + ")") + routing;
}

std::string shape_notice(const model::NetworkConfig& config, const Scaling& s) {
  const model::TransformerConfig narrow = fraction(config, 1, s.parts, s.cut, 0).transformer();
  const model::TransformerConfig wide = fraction(config, 3, s.parts, s.cut, 0).transformer();
  const std::string blocks =
      s.blocks > 0 ? std::to_string(s.blocks) + " of its " + std::to_string(config.transformer().layers) + " blocks " : "";
  const std::string of = "/" + std::to_string(s.parts);
  const std::string kept = std::to_string(config.sequence_length()) +
                           (text(config) ? " tokens kept: fewer would give its experts shares that do not grow with them"
                                         : " patches kept: they are its image's");
  const std::string tokens = s.cut == model::ShapeCut::widths ? "its widths (its " + kept + "; head dimensions "
                                                              : "its shape (" + std::to_string(narrow.seq_len) + " to " +
                                                                    std::to_string(wide.seq_len) + " tokens, head dimensions ";
  const std::string vocabulary =
      text(config) ? ", vocabulary " + with_commas(narrow.vocab) + " to " + with_commas(wide.vocab) : "";
  return "profiling " + blocks + "at 1" + of + ", 2" + of + " and 3" + of + " of " + tokens + std::to_string(narrow.head_dim()) +
         " to " + std::to_string(wide.head_dim()) + vocabulary + ") and modelling it whole from them" +
         as_modelled(config, s.parts, s.cut);
}

// How to profile the network of `request`; sets quick where it is slow to step.
Scaling scaling_for(ProfileAndFitRequest& request, Reporter& reporter) {
  const model::NetworkConfig& config = request.network;
  const int batch = request.batches.back();
  const StepSize slow = slow_step(request.device), step = step_size(config, batch);
  const bool is_slow = !within(step, slow, request.quick ? quick_answer_share : 1.0);
  const std::string why = "a step of " + config.name + " at " + std::to_string(config.sequence_length()) + " tokens and batch " +
                          std::to_string(batch) + " takes about " + model::format_si(step.flops) + "FLOP" +
                          (squares(config) ? " and " + model::format_bytes(step.attention_bytes) + " of attention scores" : "") +
                          ": ";
  request.quick = request.quick || is_slow;
  Scaling s;
  if (request.shape_parts > 1) {
    if (request.shape_parts < 4) {
      throw InputError(config.name + ": its shape in " + std::to_string(request.shape_parts) +
                       " parts: three fractions and the whole need 4 parts or more");
    }
    s.parts = request.shape_parts;
    s.cut = cut_for(config, s.parts);
    s.blocks = request.profile_blocks;
  } else if (is_slow && (text(config) || config.family == model::Family::vit) && request.shape_parts == 0 &&
             !short_lengths_quick(request, batch, slow)) {
    const int layers = config.transformer().layers;
    const int fewest = model::blocks_with_every_kind(config.transformer());
    const int blocks = request.profile_blocks > 0 ? request.profile_blocks : (fewest < layers ? fewest : 0);
    model::ShapeCut cut = text(config) ? model::ShapeCut::tokens_and_widths : model::ShapeCut::widths;
    int parts = quick_parts(config, cut, blocks, batch, slow);
    if (parts == 0 && cut != model::ShapeCut::widths && !model::routes_tokens_in_proportion(config, 4)) {
      cut = model::ShapeCut::widths;
      parts = quick_parts(config, cut, blocks, batch, slow);
    }
    // The widths alone keep attention's squares whole: they may take a few
    // GiB where the rest is small.
    const StepSize bound = {slow.flops, slow.attention_bytes * (cut == model::ShapeCut::widths ? 4 : 1)};
    // Cut as finely as it divides, a step may stay slow: the fractions are
    // still taken where the short lengths' step, at the network's widths, is
    // larger still (a 175B-class network's two blocks at 64 tokens).
    // (A ViT has no shorter lengths: its patches are its image's.)
    const auto cheaper_than_short_lengths = [&](const StepSize& widest) {
      if (!text(config)) return false;
      const model::NetworkConfig shortest = model::at_seq_len(config, longest_short_sequence);
      return widest.flops < step_size(blocks > 0 ? model::with_blocks(shortest, blocks) : shortest, batch).flops;
    };
    if (parts > 0) {
      const StepSize widest = step_size(fraction(config, 3, parts, cut, blocks), batch);
      if (within(widest, bound, 1.0) || cheaper_than_short_lengths(widest)) s = {parts, cut, blocks, {}};
    }
  }
  if (s.parts > 0) {
    reporter.notice((is_slow ? why : "") + shape_notice(config, s));
    return s;
  }
  if (!is_slow || !text(config) || config.sequence_length() <= longest_short_sequence) return s;
  reporter.notice(why + "profiling at 16, 32 and 64 tokens and modelling " + std::to_string(config.sequence_length()) +
                  " from them");
  s.lengths = {longest_short_sequence / 4, longest_short_sequence / 2, longest_short_sequence};
  return s;
}

// A mixture of many experts routed alike, for a model that prices them once
// (ProfileAndFitRequest::alike_experts_once): the experts that stand for
// the others built and profiled (two of each run of alike ones), at every
// batch the profile runs (its probes' and its stored steps' too), and the
// model made of all (model/fit/expert_scaling.h).
model::NetworkConfig with_few_experts(const model::NetworkConfig& network, const ProfileAndFitRequest& request,
                                      const std::vector<int>& batches) {
  const model::MoeConfig* moe = network.mixture();
  if (!request.alike_experts_once || !moe) return network;
  std::vector<int> runs;
  for (int b : batches) runs.insert(runs.end(), {b, 2 * b, 4 * b, 16 * b});
  const std::optional<int> busier = model::busier_experts_at(network, runs);
  if (!busier) return network;
  return model::standing_experts(moe->experts, *busier) < moe->experts ? model::with_profiled_experts(network, busier) : network;
}

std::string join(const std::vector<int>& values) {
  std::string text;
  for (int v : values) text += (text.empty() ? "" : ", ") + std::to_string(v);
  return text;
}

}  // namespace

Profiled profile_and_fit(const ProfileAndFitRequest& asked, Reporter& reporter) {
  ProfileAndFitRequest request = asked;
  if (request.batches.empty()) request.batches = default_profile_batches(request.network);
  const Scaling scaling = scaling_for(request, reporter);
  profiler::ProfileOptions options;
  options.profile_blocks = scaling.parts > 0 ? scaling.blocks : request.profile_blocks;
  options.device = request.device;
  options.precision = request.precision.empty() ? request.network.precision : request.precision;
  if (!request.hardware.empty()) model::load_hardware(request.hardware).check_runs(options.precision);  // before profiling
  options.batches = request.batches;
  options.measure_stored = scaling.parts == 0 && scaling.lengths.empty();  // a model made over keeps no stored figures
  if (request.quick) {
    options.warmup = 1;
    options.steps = 2;
    options.rounds = 1;
    options.probe_batch = 0;
  }
  // The calibration plans the model's profile (the only one, or the largest fraction's or length's) times.
  std::vector<std::string> plan_steps = profiler::calibration_plans();
  if (request.catalog_targets_only && request.device.rfind("cuda", 0) != 0) {
    plan_steps.erase(std::find(plan_steps.begin(), plan_steps.end(), model::calibration_plans().codec));
  }
  options.plan_steps = plan_steps;
  bool warned = false;  // the same warning at every length once
  bool told_few_experts = false;
  options.on_warning = [&](const std::string& message) {
    if (!std::exchange(warned, true)) reporter.warning(message);
  };
  options.on_progress = [&](int done, int total, const std::string& note) { reporter.update(done, total, note); };
  const auto profile_and_fit_one = [&](const model::NetworkConfig& network, const std::string& stage) {
    options.network = with_few_experts(network, request, options.batches);
    const model::MoeConfig* moe = options.network.mixture();
    if (moe && moe->profiled_experts > 0 && !std::exchange(told_few_experts, true)) {
      reporter.notice("profiling " + std::to_string(moe->profiled_experts) + " of the " + std::to_string(moe->experts) +
                      " experts of each mixture block (routed alike) and modelling all of them");
    }
    reporter.begin(stage);
    const model::Profile profile = profiler::profile_network(options);
    reporter.begin("fitting");
    reporter.update(0, 1, "per-layer curves");
    model::LayerModel fitted = model::fit_profile(profile, "profile of " + profile.network).model;
    reporter.update(1, 1);
    reporter.end();
    return fitted;
  };
  Profiled out;
  out.batches = options.batches;
  const std::string label = "profiles of " + request.network.name;
  std::string scaled;
  if (scaling.parts > 0) {
    std::vector<model::ModelAtFraction> models;
    const std::string of = "/" + std::to_string(scaling.parts);
    for (int k = 1; k <= 3; ++k) {
      const std::string part = std::to_string(k) + of;
      // The whole is timed as the largest fraction is (model/fit/extrapolation.h).
      options.plan_steps = k == 3 ? plan_steps : std::vector<std::string>{};
      models.push_back({k, profile_and_fit_one(model::at_shape_fraction(request.network, k, scaling.parts, scaling.cut),
                                               "profiling at " + part)});
    }
    if (request.alike_experts_once) model::collapse_alike_experts({&models[0].model, &models[1].model, &models[2].model});
    out.model = model::at_full_shape(models, scaling.parts, scaling.cut, label);
    scaled = " and 1" + of + ", 2" + of + ", 3" + of + " of its " + (scaling.cut == model::ShapeCut::widths ? "widths" : "shape");
  } else if (!scaling.lengths.empty()) {
    std::vector<model::ModelAtLength> models;
    const int longest = *std::max_element(scaling.lengths.begin(), scaling.lengths.end());
    for (int length : scaling.lengths) {
      options.plan_steps = length == longest ? plan_steps : std::vector<std::string>{};  // as the fractions' largest above
      models.push_back({length, profile_and_fit_one(model::at_seq_len(request.network, length),
                                                    "profiling at " + std::to_string(length) + " tokens")});
    }
    if (request.alike_experts_once) {
      std::vector<model::LayerModel*> each;
      for (auto& m : models) each.push_back(&m.model);
      model::collapse_alike_experts(each);
    }
    out.model = model::at_sequence_length(models, request.network.sequence_length(), label);
    scaled = " and " + join(scaling.lengths) + " tokens";
  } else {
    out.model = profile_and_fit_one(request.network, "profiling");
    if (request.alike_experts_once) out.model = model::collapse_alike_experts(std::move(out.model));
  }
  out.how = "at batches " + join(options.batches) + scaled + ", " + std::to_string(options.steps) + " steps each";
  out.target = model::make_target(out.model, request.hardware);
  return out;
}

}  // namespace papaya::workflow
