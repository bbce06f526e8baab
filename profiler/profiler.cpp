#include "profiler/profiler.h"

#include <torch/torch.h>
#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <variant>

#include "executor/device.h"
#include "executor/networks/source_for.h"
#include "executor/plan_apply.h"
#include "executor/session.h"
#include "model/catalog/layer_parameters.h"
#include "model/catalog/network_config.h"
#include "model/catalog/parameter_count.h"
#include "model/error.h"
#include "model/fit/plan_step_calibration.h"
#include "model/plan.h"
#include "model/strategy_table.h"
#include "model/units.h"
#include "profiler/batch_run.h"
#include "profiler/codec_speed.h"
#include "profiler/host_link.h"
#include "profiler/layer_facts.h"
#include "profiler/layer_probe.h"
#include "profiler/wall_clock_timer.h"

#ifdef PAPAYA_CUDA
#include "profiler/cuda_device.h"
#endif
#ifdef PAPAYA_CUPTI
#include "profiler/cupti_timer.h"
#endif

#ifndef PAPAYA_VERSION
#error "PAPAYA_VERSION must be defined by the build"
#endif

namespace papaya::profiler {
namespace {

// The default probe batch, as a multiple of the largest profiled batch: far
// enough that the time per sample has settled (on the 2-core CPU of
// bench/RESULTS.md, a point at 64 from a profile at 1, 2, 4 brings the
// predicted step at 8 to 32 within 7%, against 24% without it).
constexpr int probe_factor = 16;

// CPU: the wall clock. CUDA: CUPTI's device time where this build has CUPTI
// and it can record; else the wall clock with the device synchronized at
// every marker.
std::unique_ptr<LayerTimer> make_timer(const torch::Device& device, int layers, const ProfileOptions& options) {
  if (device.is_cpu()) return std::make_unique<WallClockTimer>(layers, nullptr);
#ifdef PAPAYA_CUPTI
  try {
    return std::make_unique<CuptiTimer>(layers);
  } catch (const std::runtime_error& e) {
    if (options.on_warning) options.on_warning(std::string(e.what()) + "; timing layers with a synchronized wall clock");
  }
#else
  if (options.on_warning) options.on_warning("this papaya is built without CUPTI; timing layers with a synchronized wall clock");
#endif
  return std::make_unique<WallClockTimer>(layers, [device] { executor::synchronize(device); });
}

int64_t memory_bytes([[maybe_unused]] const torch::Device& device) {
#ifdef PAPAYA_CUDA
  if (device.is_cuda()) return cuda_memory_bytes(device.index());
#endif
  return static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
}

model::MachineInfo describe_machine(const torch::Device& device, const LayerTimer& timer) {
  model::MachineInfo m;
  m.device = device.str();
  m.device_name = executor::device_name(device);
  m.memory_bytes = memory_bytes(device);
  m.threads = torch::get_num_threads();
  m.torch_version = TORCH_VERSION;
  m.papaya_version = PAPAYA_VERSION;
  m.timing = timer.name();
#ifdef PAPAYA_CUDA
  if (device.is_cuda()) m.cuda_version = cuda_runtime_version();
#endif
  return m;
}

std::vector<int> sorted(std::vector<int> batches) {
  std::sort(batches.begin(), batches.end());
  return batches;
}

std::string join(const std::vector<int>& values) {
  std::string out;
  for (int v : values) out += (out.empty() ? "" : ", ") + std::to_string(v);
  return out;
}

// How many of a network's blocks to profile, 0 for the whole network (see
// ProfileOptions::profile_blocks).
double device_memory(const ProfileOptions& options) {
  return static_cast<double>(options.memory_limit > 0 ? options.memory_limit
                                                      : memory_bytes(executor::resolve_device(options.device)));
}

int blocks_to_profile(const model::NetworkConfig& whole, const ProfileOptions& options) {
  const int asked = options.profile_blocks;
  if (asked > 0) {
    const int all = std::holds_alternative<model::TransformerConfig>(whole.body) ? whole.transformer().layers : 0;
    if (asked == all) return 0;
    const int blocks = model::with_blocks(whole, asked).transformer().layers;
    const int needed = model::blocks_with_every_kind(whole.transformer());
    if (blocks < needed) {
      throw InputError(whole.name + ": " + std::to_string(blocks) + " blocks do not hold every kind of its " +
                       std::to_string(all) + " (an attention window, an MLP or a mixture of experts; two alike last): profile " +
                       std::to_string(needed) + " or more");
    }
    return blocks;
  }
  if (asked < 0) throw InputError(std::to_string(asked) + " blocks to profile: cannot be negative");
  if (!std::holds_alternative<model::TransformerConfig>(whole.body)) return 0;
  const int blocks = model::blocks_with_every_kind(whole.transformer());
  if (blocks >= whole.transformer().layers) return 0;
  const double memory = device_memory(options);
  const double state = model::static_state_bytes(whole);
  if (state <= memory / 2) return 0;
  if (options.on_warning) {
    const int all = whole.transformer().layers;
    options.on_warning("the whole network's weights, gradients and AdamW state (" + model::format_bytes(state) +
                       ") take more than half of this device's " + model::format_bytes(memory) + ": profiling " +
                       std::to_string(blocks) + " of its " + std::to_string(all) + " blocks, and the model scales them to all " +
                       std::to_string(all) + " (the blocks to profile can be chosen)");
  }
  return blocks;
}

// A network whose weights, gradients and AdamW state alone are more than
// the device holds would be killed while building it, not measured.
void check_state_fits(const model::NetworkConfig& profiled, int blocks, const ProfileOptions& options) {
  const double memory = device_memory(options), state = model::static_state_bytes(profiled);
  if (state <= memory) return;
  throw InputError(profiled.name + ": " + (blocks > 0 ? std::to_string(blocks) + " of its blocks hold " : "") +
                   model::format_bytes(state) + " of weights, gradients and AdamW state" + (blocks > 0 ? "" : " alone") +
                   ", more than this device's " + model::format_bytes(memory) +
                   ": profile fewer blocks, or the network at fractions of its shape");
}

// Each layer's scratch with its slots stored (LayerProfile::stored): a
// step of the narrowest codec's plan at each batch that ran and at two and
// four times the largest (memory alone, which one step after one of warm-up
// shows; the stored plan takes less than keep's, and a batch out of memory
// ends them), and each layer at the probe batch under it, alone or in its
// block, as the probe runs keep's. A pass's peak is the largest of lines in
// the batch, and where the largest changes between the profiled batches and
// the probe's (an LSTM's backward, from its fixed scratch to its gathered
// gradients) the larger batches show the steeper one. Calls `on_done` after
// each batch and after the probe.
void measure_stored(executor::Session& session, LayerTimer& timer, const ProfileOptions& options, model::Profile& profile,
                    const std::function<void()>& on_done) {
  executor::apply_plan(*session.network, model::load_plan(model::narrowest_codec_plan(), session.layout, session.config.name),
                       session.layout);
  ProbeOptions probe;
  std::vector<int> batches;
  for (const model::IterationMeasurement& it : profile.iterations) {
    if (it.oom) {
      on_done();
      continue;
    }
    probe.from = it.batch;
    probe.profiled.push_back(it.batch);
    batches.push_back(it.batch);
  }
  const int largest = batches.back();
  for (int times : {2, 4}) batches.push_back(times * largest);
  bool out_of_memory = false;
  for (const int batch : batches) {
    // Past the probe batch, the probe's runs say more.
    if (out_of_memory || (profile.probe_batch > 0 && batch >= profile.probe_batch)) {
      on_done();
      continue;
    }
    BatchRunOptions run_options;
    run_options.batch = batch;
    run_options.warmup = 1;
    run_options.steps = 1;
    run_options.memory_limit = options.memory_limit;
    run_options.time_segments = false;
    const BatchRun run = run_batch(*session.network, *session.data, *session.optimizer, session.memory, timer, run_options);
    on_done();
    out_of_memory = run.iteration.oom;
    if (out_of_memory) continue;
    for (size_t i = 0; i < profile.layers.size(); ++i) {
      const model::LayerMeasurement& m = run.layers[i];
      profile.layers[i].stored.push_back({batch, m.forward_peak_bytes - m.forward_start_bytes,
                                          m.backward_peak_bytes - m.backward_start_bytes,
                                          m.backward_gap_peak_bytes - m.backward_start_bytes});
    }
  }
  if (profile.probe_batch <= 0) return;
  probe.batch = profile.probe_batch;
  probe.memory_limit = options.memory_limit;
  probe.bytes_only = true;
  const LayerProbes probes = probe_layers(*session.network, *session.data, session.memory, timer, probe);
  on_done();
  for (size_t i = 0; i < profile.layers.size(); ++i) {
    const std::optional<model::LayerProbe>& p = probes.layers[i];
    if (p) {
      profile.layers[i].stored.push_back(
          {profile.probe_batch, p->forward_headroom_bytes, p->backward_headroom_bytes, std::nullopt});
    }
  }
}

// Every segment of the zoo hands its input to its first layer, which saves it
// as "input" (the assumption segment_recompute.cpp makes too).
model::SavedTensorProfile segment_input(const std::vector<model::LayerProfile>& layers, const std::string& segment) {
  for (const auto& layer : layers) {
    if (layer.segment != segment) continue;
    for (const auto& saved : layer.saved) {
      if (saved.slot == "input") return saved;
    }
    throw std::logic_error("the first layer of segment " + segment + " saves no input");
  }
  throw std::logic_error("segment " + segment + " has no layer");
}

// The progress bar's count: steps done of `total` announced.
struct Progress {
  const ProfileOptions& options;
  int done = 0, total = 0;
  void step(const std::string& note) { at(done + 1, note); }
  void at(int steps_done, const std::string& note) {
    done = steps_done;
    if (options.on_progress) options.on_progress(done, total, note);
  }
};

// How the batches' steps are split between the rounds: round r measures
// each batch for its share of the steps, after the full warm-up in the
// first round and one step in the others.
struct Rounds {
  int count, steps, warmup;
  explicit Rounds(const ProfileOptions& options)
      : count(std::min(options.rounds, options.steps)), steps(options.steps), warmup(options.warmup) {}
  int steps_in(int r) const { return steps / count + (r < steps % count ? 1 : 0); }
  int warmup_in(int r) const { return r == 0 ? warmup : std::min(warmup, 1); }
  int runs_in(int r) const { return warmup_in(r) + steps_in(r) + 1; }  // the last: the segments' recompute
};

// The profile before anything runs: the network, its layers and segments.
model::Profile described(const executor::Session& session, const ProfileOptions& options, int blocks,
                         const std::vector<int>& batches) {
  model::Profile profile;
  profile.network = session.config.name;
  profile.network_config = options.network.document;
  profile.profiled_blocks = blocks;
  profile.precision = options.precision;
  profile.batches = batches;
  profile.layers = describe_layers(*session.network, session.layout);
  for (const auto* segment : session.network->segments()) {
    profile.segments.push_back({segment->path(), {}, segment_input(profile.layers, segment->path())});
  }
  return profile;
}

// The steps every phase below announces.
int steps_announced(const executor::Network& network, const ProfileOptions& options, const Rounds& rounds, int probe_batch) {
  const int batches = static_cast<int>(options.batches.size());
  int total = 0;
  if (probe_batch > 0) {  // each segment, and each layer outside one that runs alone, in each round
    total = static_cast<int>(network.segments().size());
    for (const auto* layer : network.layers()) total += layer->segment().empty() && layer->runs_alone() ? 1 : 0;
    total *= rounds.count;
  }
  for (int r = 0; r < rounds.count; ++r) total += rounds.runs_in(r) * batches;
  total += static_cast<int>(options.plan_steps.size()) * 2 * (options.warmup + options.steps);  // each after a keep step
  if (options.measure_stored) total += batches + 2 + (probe_batch > 0 ? 1 : 0);                 // OOM batches: 1 each
  return total;
}

// Each batch in turn, round after round (a batch out of memory no more),
// then each one's median step into the profile. Throws InputError where
// every batch ran out of memory.
void measure_batches(executor::Session& session, LayerTimer& timer, const ProfileOptions& options, const Rounds& rounds,
                     Progress& progress, model::Profile& profile) {
  const std::vector<int>& batches = profile.batches;
  int planned = 0;
  std::vector<std::vector<BatchRun>> runs(batches.size());
  for (int r = 0; r < rounds.count; ++r) {
    for (size_t b = 0; b < batches.size(); ++b) {
      if (!runs[b].empty() && runs[b].back().iteration.oom) continue;
#ifdef PAPAYA_CUDA
      if (session.device.is_cuda()) cuda_release_cache();
#endif
      const std::string note =
          "batch " + std::to_string(batches[b]) + ", round " + std::to_string(r + 1) + "/" + std::to_string(rounds.count);
      BatchRunOptions run_options;
      run_options.batch = batches[b];
      run_options.warmup = rounds.warmup_in(r);
      run_options.steps = rounds.steps_in(r);
      run_options.memory_limit = options.memory_limit;
      run_options.on_step = [&] { progress.step(note); };
      runs[b].push_back(run_batch(*session.network, *session.data, *session.optimizer, session.memory, timer, run_options));
      planned += rounds.runs_in(r);
      const bool oom = runs[b].back().iteration.oom;
      for (int later = r + 1; oom && later < rounds.count; ++later) planned += rounds.runs_in(later);
      progress.at(planned, note + (oom ? " (out of memory)" : ""));
    }
  }
  for (size_t b = 0; b < batches.size(); ++b) {
    const BatchRun run = median_run(runs[b]);
    profile.iterations.push_back(run.iteration);
    for (size_t i = 0; i < profile.layers.size(); ++i) profile.layers[i].measured.push_back(run.layers[i]);
    for (size_t s = 0; s < profile.segments.size(); ++s) {
      profile.segments[s].recompute_s.push_back(run.recompute_s[s]);
      if (!run.iteration.oom) profile.segments[s].returns_last_layer_output = run.returns_last_layer_output[s];
    }
  }
  if (std::all_of(profile.iterations.begin(), profile.iterations.end(), [](const auto& it) { return it.oom; })) {
    std::string why =
        options.memory_limit > 0 ? " (memory limit " + model::format_bytes(static_cast<double>(options.memory_limit)) + ")" : "";
    throw InputError(session.config.name + ": every batch size (" + join(batches) + ") ran out of memory on " +
                     session.device.str() + why);
  }
}

// Every layer (and each segment's work between its layers) once more at
// `probe_batch`, from the largest batch that ran.
void probe_each_layer(executor::Session& session, LayerTimer& timer, const ProfileOptions& options, const Rounds& rounds,
                      int probe_batch, Progress& progress, model::Profile& profile) {
#ifdef PAPAYA_CUDA
  if (session.device.is_cuda()) cuda_release_cache();
#endif
  ProbeOptions probe;
  for (const auto& it : profile.iterations) {
    if (it.oom) continue;
    probe.from = it.batch;
    probe.profiled.push_back(it.batch);
  }
  probe.batch = probe_batch;
  probe.rounds = rounds.count;
  probe.memory_limit = options.memory_limit;
  const std::string note = "each layer at batch " + std::to_string(probe_batch) + ", alone or in its block";
  probe.on_probe = [&] { progress.step(note); };
  const LayerProbes probes = probe_layers(*session.network, *session.data, session.memory, timer, probe);
  profile.probe_batch = probe_batch;
  for (size_t i = 0; i < profile.layers.size(); ++i) profile.layers[i].probe = probes.layers[i];
  for (size_t s = 0; s < profile.segments.size(); ++s) {
    model::SegmentProfile& segment = profile.segments[s];
    segment.probe = probes.segments[s];
    if (probes.between_s[s].empty()) continue;
    auto measured = probes.between_s[s].begin();
    for (const auto& it : profile.iterations) segment.between_s.push_back(it.oom ? 0 : *measured++);
  }
}

// A step under each of the options' plan_steps at the smallest batch that
// ran, each right after a keep step there (what it is compared with), the
// network put back to keep after.
void time_plan_steps(executor::Session& session, LayerTimer& timer, const ProfileOptions& options, Progress& progress,
                     model::Profile& profile) {
  const auto smallest =
      std::find_if(profile.iterations.begin(), profile.iterations.end(), [](const auto& it) { return !it.oom; });
  // The median step under `plan` at the smallest batch: none where it ran out of memory.
  const auto step_under = [&](const std::string& plan, const std::string& note) -> std::optional<double> {
    executor::apply_plan(*session.network, model::load_plan(plan, session.layout, session.config.name), session.layout);
    BatchRunOptions run_options;
    run_options.batch = smallest->batch;
    run_options.warmup = options.warmup;
    run_options.steps = options.steps;
    run_options.memory_limit = options.memory_limit;
    run_options.time_segments = false;
    run_options.on_step = [&] { progress.step(note); };
    const BatchRun run =
        median_run({run_batch(*session.network, *session.data, *session.optimizer, session.memory, timer, run_options)});
    if (run.iteration.oom) return std::nullopt;
    return run.iteration.iteration_s;
  };
  for (const std::string& name : options.plan_steps) {
    const std::string note = name + " at batch " + std::to_string(smallest->batch);
    const std::optional<double> keep = step_under("keep", note);
    const std::optional<double> planned = step_under(name, note);
    if (keep && planned) profile.plan_steps.push_back({name, smallest->batch, *planned, *keep});
  }
}

// The machine's figures: the device, the codecs' and inverted activations'
// speed, the host link.
void measure_machine(executor::Session& session, const LayerTimer& timer, model::Profile& profile) {
  const torch::Device& device = session.device;
  profile.machine = describe_machine(device, timer);
  profile.codecs = measure_codecs(device, session.precision.dtype, session.memory);
  profile.inverts = measure_inverts(device, session.precision.dtype);
  if (device.is_cuda()) {
    const HostLink link = measure_host_link(device);
    profile.h2d_bytes_per_s = link.h2d_bytes_per_s;
    profile.d2h_bytes_per_s = link.d2h_bytes_per_s;
  }
}

}  // namespace

std::vector<std::string> calibration_plans() {
  const model::CalibrationPlans& plans = model::calibration_plans();
  return {plans.codec, plans.recompute};
}

void ProfileOptions::validate() const {
  if (steps < 1) throw InputError("at least one measured step is needed");
  if (warmup < 0) throw InputError("warm-up steps cannot be negative");
  if (rounds < 1) throw InputError("at least one round is needed");
  if (batches.empty()) throw InputError("no batch size given");
  const std::vector<std::string> plans = calibration_plans();
  for (const std::string& plan : plan_steps) {
    if (std::find(plans.begin(), plans.end(), plan) == plans.end()) throw InputError("'" + plan + "' is not a calibration plan");
  }
  const std::vector<int> in_order = sorted(batches);
  const auto repeated = std::adjacent_find(in_order.begin(), in_order.end());
  if (repeated != in_order.end()) throw InputError("batch size " + std::to_string(*repeated) + " is repeated");
  if (in_order.front() < 1) throw InputError("batch sizes must be positive");
  const int probe = probe_batch.value_or(probe_factor * in_order.back());
  if (probe < 0 || (probe > 0 && probe <= in_order.back())) {
    throw InputError("probe batch " + std::to_string(probe) + " is not larger than the largest batch (" +
                     std::to_string(in_order.back()) + "); 0 turns probes off");
  }
}

model::Profile profile_network(const ProfileOptions& options) {
  options.validate();
  const std::vector<int> batches = sorted(options.batches);
  const int probe_batch = options.probe_batch.value_or(probe_factor * batches.back());
  executor::SessionOptions session_options;
  session_options.device = options.device;
  session_options.precision = options.precision;
  session_options.seed = options.seed;
  // On CUDA the tensors' own bytes, not the caching allocator's blocks: a
  // block cached by one batch and reused by a smaller one may be up to 1 MiB
  // larger than asked for, slack that depends on what ran before (2-5 MiB a
  // block of Qwen2-0.5B at batches 1 and 2 after 4, none at 4: the slope
  // fitted through them 2 MiB a sample short), and the rounding of small
  // tensors is no polynomial of a shape. Targets add the 512-byte rounding.
  session_options.counted = executor::Counted::tensor_bytes;
  const model::NetworkConfig& whole = options.network;
  const int blocks = blocks_to_profile(whole, options);
  if (blocks > 0)
    model::check_blocks_frozen_alike(whole, blocks, whole.name + ": " + std::to_string(blocks) + " blocks profiled");
  const model::NetworkConfig profiled = blocks > 0 ? model::with_blocks(whole, blocks) : whole;
  check_state_fits(profiled, blocks, options);
  executor::Session session(*executor::source_for(profiled), session_options);
  model::Profile profile = described(session, options, blocks, batches);
  const std::unique_ptr<LayerTimer> timer =
      make_timer(session.device, static_cast<int>(session.network->layers().size()), options);
  const Rounds rounds(options);
  Progress progress{options, 0, steps_announced(*session.network, options, rounds, probe_batch)};
  measure_batches(session, *timer, options, rounds, progress, profile);
  if (probe_batch > 0) probe_each_layer(session, *timer, options, rounds, probe_batch, progress, profile);
  if (!options.plan_steps.empty()) time_plan_steps(session, *timer, options, progress, profile);
  if (options.measure_stored) {
    measure_stored(session, *timer, options, profile,
                   [&] { progress.step("each layer's scratch under " + model::narrowest_codec_plan()); });
  }
  executor::apply_plan(*session.network, model::load_plan("keep", session.layout, session.config.name), session.layout);
  measure_machine(session, *timer, profile);
  return profile;
}

}  // namespace papaya::profiler
