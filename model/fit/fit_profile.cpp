#include "model/fit/fit_profile.h"

#include <ceres/ceres.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "model/catalog/layer_parameters.h"
#include "model/catalog/network_config.h"
#include "model/catalog/parameter_count.h"
#include "model/catalog/target.h"
#include "model/error.h"
#include "model/fit/block_scaling.h"
#include "model/fit/expert_scaling.h"
#include "model/fit/plan_step_calibration.h"
#include "model/median.h"
#include "model/plan.h"
#include "model/plan_space/predict.h"

namespace papaya::model {
namespace {

// The profile's batch sizes that ran (not out of memory), as indices.
std::vector<size_t> usable_batches(const Profile& p, const std::string& label) {
  if (p.layers.empty()) throw InputError(label + ": the profile has no layers");
  std::vector<size_t> use;
  std::set<int> sizes;
  for (size_t i = 0; i < p.batches.size(); ++i) {
    if (p.iterations[i].oom) continue;
    use.push_back(i);
    sizes.insert(p.batches[i]);
  }
  if (sizes.size() < 2) {
    throw InputError(label + ": the fit needs measurements at two batch sizes or more that did not run out of memory (has " +
                     std::to_string(sizes.size()) + ")");
  }
  return use;
}

template <typename Get>
std::vector<Sample> samples(const Profile& p, const std::vector<size_t>& use, Get get) {
  std::vector<Sample> out;
  for (size_t i : use) out.push_back({static_cast<double>(p.batches[i]), get(i)});
  return out;
}

struct PeakFit {
  LinearCurve line;
  std::vector<Sample> headroom;  // LayerFit::forward_headroom's
};

// A pass's peak bytes: its start's line plus the scratch it takes above its
// start. Where the layer was probed (alone, or within its segment), the
// scratch runs through what the step took at each profiled batch, what the
// probe's runs took at its rungs and at the probe batch, where its shape
// has settled (LayerProbe), and on along the line through the last two: a
// block run alone takes, layer by layer, the scratch it takes in the whole
// step at that batch, and a layer run alone gets its gradient as a step
// hands it over (freed once read), so that it takes its step's scratch too.
// Kernels chosen by the batch show there: on one thread, LibTorch runs a
// 1x1 convolution on its own path below a batch of 16 and on oneDNN's, with
// more scratch, from 16 on (ShuffleNetV2's last convolution, a UNet's head),
// which a line from the profiled batches to the probe's cuts across. What
// the step takes beside the probe's run at the profiled batches is added to
// each run's: the last layer of a TorchScript network, whose step runs the
// code after it and the loss, with their gradients' transients, which a run
// alone cannot; a block whose output's gradient comes in another layout in
// the step (the traced MLP-Mixer's, transposed: 32 KiB a sample more in one
// layer, less in another). Else the scratch, as every other byte figure,
// takes the line through the two largest profiled batches.
// `start` is the pass's start, `start_line` its fitted line.
PeakFit peak_fit(const std::vector<Sample>& start, const LinearCurve& start_line, const std::vector<Sample>& peak,
                 const Profile& p, const std::optional<LayerProbe>& probe, int64_t LayerProbe::*probe_headroom,
                 int64_t ProbeRung::*rung_headroom) {
  if (!probe) return {fit_bytes(peak), {}};
  std::map<double, double> points;  // batch -> scratch
  for (size_t k = 0; k < start.size(); ++k) points[start[k].batch] = peak[k].value - start[k].value;
  const double largest = points.rbegin()->first;
  // What the step takes beside the probe's run at the profiled batches it
  // has a rung at: the line through the two largest (through zero where one).
  std::vector<Sample> beside;
  for (const ProbeRung& r : probe->rungs) {
    const auto step = points.find(static_cast<double>(r.batch));
    if (step != points.end()) beside.push_back({step->first, step->second - static_cast<double>(r.*rung_headroom)});
  }
  LinearCurve extra;
  if (beside.size() >= 2) {
    extra = fit_linear(std::vector<Sample>(beside.end() - 2, beside.end()));
  } else if (beside.size() == 1) {
    extra.per_sample = beside.front().value / beside.front().batch;
  }
  const auto in_step = [&](double b, int64_t run) { return std::max(0.0, static_cast<double>(run) + extra.at(b)); };
  for (const ProbeRung& r : probe->rungs) {
    const double b = static_cast<double>(r.batch);
    if (b > largest) points[b] = in_step(b, r.*rung_headroom);
  }
  const double probe_batch = p.probe_batch;
  points[probe_batch] = in_step(probe_batch, (*probe).*probe_headroom);
  PeakFit out;
  for (const auto& [b, bytes] : points) out.headroom.push_back({b, bytes});
  const LinearCurve above = fit_linear(std::vector<Sample>(out.headroom.end() - 2, out.headroom.end()));
  out.line = {start_line.per_sample + above.per_sample, start_line.fixed + above.fixed};
  return out;
}

// LayerFit::stored_forward_headroom (or backward's): the stored step's
// scratch at each batch of `use` and each past the profiled ones it ran at,
// and at the probe batch keep's scratch there (`keep`,
// LayerFit::forward_headroom's points) plus what storing added to the
// probe's run.
std::vector<Sample> stored_headroom(const Profile& p, const std::vector<size_t>& use, const LayerProfile& l,
                                    const std::vector<Sample>& keep, int64_t LayerProbe::*probe_headroom,
                                    int64_t StoredHeadroom::*stored_headroom) {
  const auto stored_at = [&](int64_t batch) {
    return std::find_if(l.stored.begin(), l.stored.end(), [&](const StoredHeadroom& r) { return r.batch == batch; });
  };
  std::vector<Sample> out;
  for (size_t i : use) {
    const auto stored = stored_at(p.batches[i]);
    if (stored != l.stored.end())
      out.push_back({static_cast<double>(p.batches[i]), static_cast<double>((*stored).*stored_headroom)});
  }
  const int largest = *std::max_element(p.batches.begin(), p.batches.end());
  for (const StoredHeadroom& r : l.stored) {
    if (r.batch > largest && r.batch != p.probe_batch)
      out.push_back({static_cast<double>(r.batch), static_cast<double>(r.*stored_headroom)});
  }
  std::sort(out.begin(), out.end(), [](const Sample& a, const Sample& b) { return a.batch < b.batch; });
  const auto probed = stored_at(p.probe_batch);
  if (l.probe && probed != l.stored.end() && !keep.empty() && keep.back().batch == p.probe_batch) {
    const double added = static_cast<double>((*probed).*stored_headroom - (*l.probe).*probe_headroom);
    out.push_back({static_cast<double>(p.probe_batch), std::max(0.0, keep.back().value + added)});
  }
  if (out.size() < 2) out.clear();  // no line
  return out;
}

// LayerFit::stored_backward_gap_headroom: at each batch of `use` and each
// past the profiled ones the stored step ran at.
std::vector<Sample> stored_gap_headroom(const Profile& p, const std::vector<size_t>& use, const LayerProfile& l) {
  const int largest = *std::max_element(p.batches.begin(), p.batches.end());
  std::vector<Sample> out;
  for (const StoredHeadroom& r : l.stored) {
    const bool used = std::any_of(use.begin(), use.end(), [&](size_t i) { return p.batches[i] == r.batch; });
    if (r.backward_gap_headroom_bytes && (used || r.batch > largest)) {
      out.push_back({static_cast<double>(r.batch), static_cast<double>(*r.backward_gap_headroom_bytes)});
    }
  }
  std::sort(out.begin(), out.end(), [](const Sample& a, const Sample& b) { return a.batch < b.batch; });
  if (out.size() < 2) out.clear();  // no line
  return out;
}

// A segment's or the rest's time at the profile's probe batch, where it has
// one, joins the profiled batches' (the one point past them the curve is
// fitted to).
std::vector<Sample> with_probe(std::vector<Sample> s, const Profile& p, std::optional<double> probe_seconds) {
  if (probe_seconds) s.push_back({static_cast<double>(p.probe_batch), *probe_seconds});
  return s;
}

// The rest of the iteration at the probe batch, where every segment was
// probed: the segments' work between their layers there, plus what lies
// outside them, taken as fixed: the median over the profiled batches of the
// rest less the segments' work between layers at that batch. A slope of the
// rest fitted to three small batches alone follows their noise (30 us per
// sample on resnet-tiny, whose rest barely grows: 15% of its step at 32).
template <typename Rest>
std::optional<double> rest_at_probe(const Profile& p, const std::vector<size_t>& use, Rest rest) {
  if (p.probe_batch == 0 || p.segments.empty()) return std::nullopt;
  double between_at_probe = 0;
  for (const auto& s : p.segments) {
    if (!s.probe || s.between_s.empty()) return std::nullopt;
    between_at_probe += s.probe->between_s;
  }
  std::vector<double> outside;
  for (size_t i : use) {
    double between = 0;
    for (const auto& s : p.segments) between += s.between_s[i];
    outside.push_back(rest(i) - between);
  }
  return median(outside) + between_at_probe;
}

// A layer pass's seconds where they were timed: in the step at the batches
// of `use` (a batch's median where it ran more than once), at the probe's
// timed rungs past the largest of them, and at the probe batch; batches
// ascending. Where the probe timed no rungs (a profile from before they
// were timed), the points the curve alone was fitted to.
struct TimedPass {
  std::vector<Sample> points;
  bool rungs_timed = false;
};
TimedPass timed_pass(const Profile& p, const std::vector<size_t>& use, const LayerProfile& l, double LayerMeasurement::*step,
                     double ProbeRung::*rung, double LayerProbe::*probed) {
  std::map<double, std::vector<double>> at;
  for (size_t i : use) at[p.batches[i]].push_back(l.measured[i].*step);
  TimedPass out;
  const double largest = at.rbegin()->first;
  if (l.probe) {
    for (const ProbeRung& r : l.probe->rungs) {
      if (!r.timed()) continue;
      out.rungs_timed = true;
      const double batch = static_cast<double>(r.batch);
      if (batch > largest) at[batch].push_back(r.*rung);
    }
    at[p.probe_batch].push_back((*l.probe).*probed);
  }
  for (auto& [batch, seconds] : at) out.points.push_back({batch, median(seconds)});
  return out;
}

SaturatingCurve fit_time(const std::vector<Sample>& s, const std::string& what, double min_fixed = 0) {
  try {
    return fit_saturating(s, min_fixed);
  } catch (const InputError& e) {
    throw InputError(what + ": " + e.what());
  }
}

// log(measured k) - log(roofline per sample) of one layer.
struct RooflineResidual {
  double log_k, flops_over_peak, bytes_over_bandwidth;
  template <typename T>
  bool operator()(const T* log_eta_compute, const T* log_eta_memory, T* residual) const {
    const T compute = T(flops_over_peak) * exp(-log_eta_compute[0]);
    const T memory = T(bytes_over_bandwidth) * exp(-log_eta_memory[0]);
    residual[0] = T(log_k) - log(compute > memory ? compute : memory);
    return true;
  }
};

// Efficiencies (compute, memory) of one direction, backward taken as its
// kind's multiple of the forward's FLOPs (twice for most) and twice its bytes.
std::optional<std::pair<double, double>> fit_efficiencies(const std::vector<LayerFit>& layers, bool backward,
                                                          const HardwareSpec& hw, double peak) {
  double log_c = std::log(typical_compute_efficiency), log_m = std::log(typical_memory_efficiency);
  ceres::Problem problem;
  int used = 0;
  for (const auto& l : layers) {
    const double k = backward ? l.backward_seconds.per_sample : l.forward_seconds.per_sample;
    if (k <= 0 || (l.forward_flops_per_sample <= 0 && l.forward_bytes_moved_per_sample <= 0)) continue;
    const double flops = backward ? traits(l.kind).backward_flops_ratio : 1, bytes = backward ? 2 : 1;
    auto* cost = new ceres::AutoDiffCostFunction<RooflineResidual, 1, 1, 1>(new RooflineResidual{
        std::log(k), flops * l.forward_flops_per_sample / peak, bytes * l.forward_bytes_moved_per_sample / hw.memory_bandwidth});
    problem.AddResidualBlock(cost, new ceres::CauchyLoss(0.5), &log_c, &log_m);
    ++used;
  }
  if (used == 0) return std::nullopt;
  for (double* x : {&log_c, &log_m}) {
    problem.SetParameterUpperBound(x, 0, 0.0);  // at most the datasheet peak
    problem.SetParameterLowerBound(x, 0, std::log(1e-4));
  }
  ceres::Solver::Options options;
  options.linear_solver_type = ceres::DENSE_QR;
  options.logging_type = ceres::SILENT;
  options.max_num_consecutive_invalid_steps = 100;  // round-off at the optimum: see curves.cpp
  ceres::Solver::Summary summary;
  ceres::Solve(options, &problem, &summary);
  if (!summary.IsSolutionUsable()) return std::nullopt;
  return std::make_pair(std::exp(log_c), std::exp(log_m));
}

LayerModel fit_model(const Profile& p, const std::vector<size_t>& use, const std::string& label,
                     std::vector<std::string>& notes) {
  LayerModel m;
  m.network = p.network;
  m.precision = p.precision;
  m.machine = p.machine;
  for (size_t i : use) m.batches.push_back(p.batches[i]);
  m.probe_batch = p.probe_batch;
  std::sort(m.batches.begin(), m.batches.end());
  m.batches.erase(std::unique(m.batches.begin(), m.batches.end()), m.batches.end());

  for (const auto& l : p.layers) {
    LayerFit f;
    static_cast<LayerDescription&>(f) = l;
    const auto figure = [&](int64_t LayerMeasurement::*field) {
      return samples(p, use, [&](size_t i) { return static_cast<double>(l.measured[i].*field); });
    };
    const std::vector<Sample> forward_start = figure(&LayerMeasurement::forward_start_bytes);
    const std::vector<Sample> backward_start = figure(&LayerMeasurement::backward_start_bytes);
    f.forward_start = fit_bytes(forward_start);
    PeakFit forward = peak_fit(forward_start, f.forward_start, figure(&LayerMeasurement::forward_peak_bytes), p, l.probe,
                               &LayerProbe::forward_headroom_bytes, &ProbeRung::forward_headroom_bytes);
    f.forward_peak = forward.line;
    f.forward_headroom = std::move(forward.headroom);
    f.backward_start = fit_bytes(backward_start);
    PeakFit backward = peak_fit(backward_start, f.backward_start, figure(&LayerMeasurement::backward_peak_bytes), p, l.probe,
                                &LayerProbe::backward_headroom_bytes, &ProbeRung::backward_headroom_bytes);
    f.backward_peak = backward.line;
    f.backward_headroom = std::move(backward.headroom);
    f.stored_forward_headroom = stored_headroom(p, use, l, f.forward_headroom, &LayerProbe::forward_headroom_bytes,
                                                &StoredHeadroom::forward_headroom_bytes);
    f.stored_backward_headroom = stored_headroom(p, use, l, f.backward_headroom, &LayerProbe::backward_headroom_bytes,
                                                 &StoredHeadroom::backward_headroom_bytes);
    f.stored_backward_gap_headroom = stored_gap_headroom(p, use, l);
    f.forward_gap_peak = fit_bytes(figure(&LayerMeasurement::forward_gap_peak_bytes));
    f.backward_gap_peak = fit_bytes(figure(&LayerMeasurement::backward_gap_peak_bytes));
    // Each pass's curve, and where the probe timed rungs, the points the
    // time goes through up to the probe batch (LayerFit::forward_timed).
    const auto time = [&](SaturatingCurve& curve, std::vector<Sample>& points, double LayerMeasurement::*step,
                          double ProbeRung::*rung, double LayerProbe::*probe, const std::string& pass) {
      TimedPass timed = timed_pass(p, use, l, step, rung, probe);
      curve = fit_time(timed.points, label + ": " + l.path + " " + pass);
      if (timed.rungs_timed && timed.points.size() >= 2) points = std::move(timed.points);
    };
    time(f.forward_seconds, f.forward_timed, &LayerMeasurement::forward_s, &ProbeRung::forward_s, &LayerProbe::forward_s,
         "forward");
    time(f.backward_seconds, f.backward_timed, &LayerMeasurement::backward_s, &ProbeRung::backward_s, &LayerProbe::backward_s,
         "backward");
    m.layers.push_back(std::move(f));
  }
  for (const auto& s : p.segments) {
    m.segments.push_back({s.path, s.input,
                          fit_time(with_probe(samples(p, use, [&](size_t i) { return s.recompute_s[i]; }), p,
                                              s.probe ? std::optional<double>(s.probe->recompute_s) : std::nullopt),
                                   label + ": segment " + s.path + " recompute"),
                          s.returns_last_layer_output});
  }

  double static_sum = 0;
  for (size_t i : use) static_sum += static_cast<double>(p.iterations[i].static_bytes);
  m.static_bytes = static_sum / static_cast<double>(use.size());
  // The optimizer step updates the parameters and their moments: its cost
  // does not depend on the batch, and a slope fitted to its noise at a few
  // small batches would grow it with the batch (by 0.5 ms at 32 on
  // resnet-tiny, 10% of its step).
  std::vector<double> optimizer_s;
  for (size_t i : use) optimizer_s.push_back(p.iterations[i].optimizer_s);
  m.optimizer_seconds = SaturatingCurve{0, 0, median(optimizer_s)};
  const auto rest = [&](size_t i) {
    double layers = 0;
    for (const auto& l : p.layers) layers += l.measured[i].forward_s + l.measured[i].backward_s;
    return p.iterations[i].iteration_s - layers - p.iterations[i].optimizer_s;
  };
  m.rest_seconds = fit_time(with_probe(samples(p, use, rest), p, rest_at_probe(p, use, rest)), label + ": rest of the iteration",
                            -std::numeric_limits<double>::infinity());
  m.codecs = p.codecs;
  m.inverts = p.inverts;
  m.h2d_bytes_per_s = p.h2d_bytes_per_s;
  m.d2h_bytes_per_s = p.d2h_bytes_per_s;

  // The passes' peak beyond the largest per-layer figure (gaps included), at each batch; the
  // optimizer's step apart: where it is the step's peak at the profiled
  // batches (weights large against activations), folding it in here would
  // give a line falling with the batch.
  m.unattributed_peak = fit_bytes(samples(p, use, [&](size_t i) {
    int64_t top = 0;
    for (const auto& l : p.layers) {
      const LayerMeasurement& m = l.measured[i];
      top = std::max({top, m.forward_peak_bytes, m.backward_peak_bytes, m.forward_gap_peak_bytes, m.backward_gap_peak_bytes});
    }
    return static_cast<double>(p.iterations[i].passes_peak_bytes - top);
  }));
  m.optimizer_peak =
      fit_bytes(samples(p, use, [&](size_t i) { return static_cast<double>(p.iterations[i].optimizer_peak_bytes); }));

  if (const auto entry = catalog_entry_for(p.machine)) {
    const auto path = entry->peak_flops.find(compute_path(p.precision));
    const bool has_path = path != entry->peak_flops.end() && path->second;
    const auto fwd = has_path ? fit_efficiencies(m.layers, false, *entry, *path->second) : std::nullopt;
    const auto bwd = has_path ? fit_efficiencies(m.layers, true, *entry, *path->second) : std::nullopt;
    if (fwd && bwd) {
      m.roofline = RooflineFit{entry->name, fwd->first, fwd->second, bwd->first, bwd->second};
    } else {
      notes.push_back("no roofline efficiencies could be fitted on " + entry->name + " (no layer with FLOPs or bytes moved)");
    }
  } else if (m.on_gpu()) {
    notes.push_back("the profiled GPU '" + p.machine.device_name +
                    "' is not in the hardware catalog: what-if predictions use typical efficiencies");
  }
  calibrate_to_plan_steps(p, m, notes);
  return m;
}

struct Point {
  double measured, predicted;
  std::string layer, figure;
  int batch;
};

FitSummary summarize(const std::vector<Point>& points) {
  FitSummary s;
  s.points = static_cast<int>(points.size());
  if (points.empty()) return s;
  std::vector<double> measured, predicted, relative;
  for (const auto& pt : points) {
    measured.push_back(pt.measured);
    predicted.push_back(pt.predicted);
    const double rel = std::fabs(pt.predicted - pt.measured) / std::max(std::fabs(pt.measured), 1e-300);
    relative.push_back(rel);
    if (rel >= s.worst_relative) {
      s.worst_relative = rel;
      s.worst_layer = pt.layer;
      s.worst_figure = pt.figure;
      s.worst_batch = pt.batch;
    }
  }
  // Constant measurements leave R² undefined: 1 if the model reproduces them.
  s.r_squared = r_squared(measured, predicted).value_or(measured == predicted ? 1.0 : 0.0);
  std::nth_element(relative.begin(), relative.begin() + static_cast<long>(relative.size() / 2), relative.end());
  s.median_relative = relative[relative.size() / 2];
  return s;
}

StepCheck check_step(const LayerModel& m, const Profile& p, size_t i) {
  const Target target = profiled_target(m);
  const Plan keep = expand_plan_name("keep", m.layout());
  const Estimate e = predict(m, target, keep, p.batches[i]);
  return {p.batches[i], p.iterations[i].iteration_s, e.seconds, static_cast<double>(p.iterations[i].peak_bytes), e.peak_bytes};
}

}  // namespace

ProfileFit fit_profile(const Profile& p, const std::string& label) {
  const std::vector<size_t> use = usable_batches(p, label);
  ProfileFit out;
  out.model = fit_model(p, use, label, out.quality.notes);
  const LayerModel& m = out.model;

  std::vector<Point> time, memory;
  for (size_t l = 0; l < m.layers.size(); ++l) {
    const LayerFit& f = m.layers[l];
    for (size_t i : use) {
      const LayerMeasurement& meas = p.layers[l].measured[i];
      const int batch = p.batches[i];
      const double b = batch;
      time.push_back({meas.forward_s, f.forward_seconds.at(b), f.path, "forward seconds", batch});
      time.push_back({meas.backward_s, f.backward_seconds.at(b), f.path, "backward seconds", batch});
      memory.push_back(
          {static_cast<double>(meas.forward_start_bytes), f.forward_start.at(b), f.path, "forward start bytes", batch});
      memory.push_back(
          {static_cast<double>(meas.forward_peak_bytes), forward_peak_at(f, b), f.path, "forward peak bytes", batch});
      memory.push_back(
          {static_cast<double>(meas.backward_start_bytes), f.backward_start.at(b), f.path, "backward start bytes", batch});
      memory.push_back(
          {static_cast<double>(meas.backward_peak_bytes), backward_peak_at(f, b), f.path, "backward peak bytes", batch});
    }
  }
  out.quality.time = summarize(time);
  out.quality.memory = summarize(memory);
  for (size_t i : use) out.quality.steps.push_back(check_step(m, p, i));

  std::set<int> sizes(m.batches.begin(), m.batches.end());
  if (sizes.size() >= 3) {
    const int largest = *sizes.rbegin();
    std::vector<size_t> smaller;
    for (size_t i : use) {
      if (p.batches[i] != largest) smaller.push_back(i);
    }
    std::vector<std::string> ignored;
    const LayerModel reduced = fit_model(p, smaller, label, ignored);
    const auto it = std::find_if(use.begin(), use.end(), [&](size_t i) { return p.batches[i] == largest; });
    const StepCheck& h = *(out.quality.holdout = check_step(reduced, p, *it));
    const double time_error = h.predicted_seconds / h.measured_seconds - 1;
    const double peak_error = h.predicted_peak_bytes / h.measured_peak_bytes - 1;
    if (std::fabs(time_error) > holdout_time_warning || std::fabs(peak_error) > holdout_peak_warning) {
      out.quality.notes.push_back(
          "fitted without batch " + std::to_string(largest) + ", the model is off there by " +
          std::to_string(static_cast<int>(std::lround(100 * time_error))) + "% in step time and " +
          std::to_string(static_cast<int>(std::lround(100 * peak_error))) +
          "% in peak memory: predictions far above the profiled batches are uncertain (profile larger batches)");
    }
  }
  for (const auto& note : profiled_target(m).notes) out.quality.notes.push_back(note);
  const bool few_experts =
      !p.network_config.is_null() && p.network_config.contains("moe") && p.network_config["moe"].value("profiled_experts", 0) > 0;
  if (p.profiled_blocks == 0 && !few_experts) return out;
  NetworkConfig whole = parse_network_config(p.network_config, label + ": network_config");
  const auto at_profiled_blocks = [&](const NetworkConfig& c) {
    return p.profiled_blocks > 0 ? with_blocks(c, p.profiled_blocks) : c;
  };
  if (few_experts) {
    const MoeConfig& moe = *whole.transformer().moe;
    const int built = moe.profiled_experts, experts = moe.experts;
    const std::vector<ExpertRun> runs = alike_expert_runs(experts, moe.busier_experts);
    const NetworkConfig profiled = at_profiled_blocks(whole);
    whole = with_profiled_experts(whole, std::nullopt);
    const double ratio = static_state_bytes(at_profiled_blocks(whole)) / static_state_bytes(profiled);
    out.model = scale_experts(out.model, runs, out.model.static_bytes * ratio, label);
    out.quality.notes.push_back("profiled " + std::to_string(built) + " of the " + std::to_string(experts) +
                                " experts of each mixture block; the model holds all " + std::to_string(experts) +
                                " (each as the profiled ones routed alike, weights, gradients and optimizer state for all)");
  }
  if (p.profiled_blocks > 0) {
    const int blocks = whole.transformer().layers;
    const double ratio = static_state_bytes(whole) / static_state_bytes(with_blocks(whole, p.profiled_blocks));
    out.model = scale_blocks(out.model, blocks, out.model.static_bytes * ratio, block_kinds(whole.transformer()), label);
    out.quality.notes.push_back("profiled " + std::to_string(p.profiled_blocks) + " of the " + std::to_string(blocks) +
                                " blocks; the model holds all " + std::to_string(blocks) +
                                " (each past the profiled ones as the last of them with its attention's window, "
                                "weights, gradients and optimizer state for all)");
  }
  // The layers the profile did not build copy others: each is frozen as the
  // whole network's config says (--freeze may name blocks).
  std::map<std::string, bool> trained;
  for (const LayerParameters& l : layer_parameters(whole)) trained[l.path] = l.trained;
  for (LayerFit& layer : out.model.layers) {
    const auto it = trained.find(layer.path);
    if (it != trained.end()) layer.frozen_bytes = it->second ? 0 : layer.parameter_bytes;
  }
  return out;
}

}  // namespace papaya::model
