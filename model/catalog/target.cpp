#include "model/catalog/target.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <sstream>

#include "model/catalog/layer_kernels.h"
#include "model/error.h"
#include "model/fp8_recipe.h"
#include "model/units.h"

namespace papaya::model {
namespace {

// Lower-case alphanumeric words: "NVIDIA A100-SXM4-40GB" -> nvidia a100 sxm4 40gb.
std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::string word;
  for (char ch : text + " ") {
    if (std::isalnum(static_cast<unsigned char>(ch))) {
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    } else if (!word.empty()) {
      out.push_back(word);
      word.clear();
    }
  }
  return out;
}

bool has_word(const std::vector<std::string>& list, const std::string& word) {
  return std::find(list.begin(), list.end(), word) != list.end();
}

std::vector<CodecMeasurement> default_codecs(double bytes_per_s) {
  std::vector<CodecMeasurement> codecs;
  for (int bits : {1, 2, 4, 8}) codecs.push_back({bits, bytes_per_s, bytes_per_s});
  return codecs;
}

double largest_batch(const LayerModel& m) { return *std::max_element(m.batches.begin(), m.batches.end()); }

std::string rate(double bytes_per_s) { return format_si(bytes_per_s) + "B/s"; }

}  // namespace

double Target::allocated(double bytes) const {
  if (!gpu || bytes <= 0) return bytes;
  const double block = static_cast<double>(cuda_block_bytes);
  return std::ceil(bytes / block) * block;
}

void Target::check_budget(double budget_bytes) const {
  if (memory_bytes > 0 && budget_bytes > memory_bytes) {
    throw InputError("budget " + format_bytes(budget_bytes) + " is more than the memory of " + name + " (" +
                     format_bytes(memory_bytes) + ")");
  }
}

const CodecMeasurement& Target::codec(int bits) const {
  const CodecMeasurement* best = &codecs.front();
  for (const auto& c : codecs) {
    if (std::abs(c.bits - bits) < std::abs(best->bits - bits)) best = &c;
  }
  return *best;
}

std::optional<HardwareSpec> catalog_entry_for(const MachineInfo& machine) {
  if (machine.device.rfind("cuda", 0) != 0) return std::nullopt;
  const auto device = words(machine.device_name);
  std::optional<HardwareSpec> best;
  for (auto& entry : hardware_catalog()) {
    const auto name = words(entry.name);
    if (!has_word(device, name.front())) continue;                     // the chip: h100, a100, rtx, ...
    if (has_word(name, "pcie") != has_word(device, "pcie")) continue;  // the form factor, where named
    const auto distance = [&](const HardwareSpec& h) {
      return std::fabs(h.memory_bytes - static_cast<double>(machine.memory_bytes));
    };
    if (!best || distance(entry) < distance(*best)) best = entry;
  }
  return best;
}

SaturatingCurve Target::rest_of(const SaturatingCurve& rest, const std::vector<bool>& held) const {
  if (reference_seconds.empty()) return rest;
  double profiled = 0, here = 0;
  for (size_t j = 0; j < held.size(); ++j) {
    if (!held[j]) continue;
    profiled += profiled_reference_seconds[j];
    here += reference_seconds[j];
  }
  return rest.times(profiled > 0 ? here / profiled : 1);
}

double Target::invert_extra_seconds(LayerKind kind, double raw_bytes) const {
  for (const auto& i : inverts) {
    if (i.kind == kind) return i.extra_seconds(raw_bytes);
  }
  return 0;
}

Target profiled_target(const LayerModel& m) {
  Target t;
  t.name = (m.machine.device_name.empty() ? m.machine.device : m.machine.device_name) + " (profiled)";
  t.gpu = m.on_gpu();
  t.memory_bytes = static_cast<double>(m.machine.memory_bytes);
  t.h2d_bytes_per_s = m.h2d_bytes_per_s;
  t.d2h_bytes_per_s = m.d2h_bytes_per_s;
  for (const auto& l : m.layers) {
    t.forward_seconds.push_back({l.forward_seconds, {}, l.forward_timed});
    t.backward_seconds.push_back({l.backward_seconds, {}, l.backward_timed});
  }
  for (const auto& s : m.segments) t.recompute_seconds.push_back(s.recompute_seconds);
  t.optimizer_seconds = m.optimizer_seconds;
  t.rest_seconds = m.rest_seconds;
  t.inverts = m.inverts;
  if (is_fp8_precision(m.precision)) {
    t.notes.push_back(m.precision + " ran as papaya's emulation (1-byte codes multiplied in bf16): its memory is FP8's, " +
                      "its times the emulation's, not FP8's; a GPU target prices FP8's products");
  }
  if (!m.codecs.empty()) {
    t.codecs = m.codecs;
  } else {
    const auto entry = catalog_entry_for(m.machine);
    const double bytes_per_s = entry ? entry->memory_bandwidth / default_codec_passes : default_cpu_codec_bytes_per_s;
    t.codecs = default_codecs(bytes_per_s);
    t.notes.push_back("the profile measured no quantize/dequantize throughput: assumed " + rate(bytes_per_s) +
                      (entry ? " (1/8 of the memory bandwidth)" : ""));
  }
  return t;
}

// What the kernel model of `hw` assumes, for a note.
std::string kernel_model_note(const HardwareSpec& hw, const std::string& precision) {
  const KernelModel& k = hw.kernels;
  std::ostringstream note;
  note << "layer times from the kernels they run on " << hw.name << " (";
  if (k.sm_count > 0) note << k.sm_count << " SMs; ";
  note << "products at " << k.matmul_efficiency_for(compute_path(precision)) << " of the " << compute_path(precision)
       << " peak, fused attention at " << k.attention_forward_efficiency << "/" << k.attention_backward_efficiency
       << " forward/backward, memory passes at " << k.memory_efficiency << " of the bandwidth, " << k.kernel_latency_s * 1e6
       << " us a kernel: " << k.source << ")";
  return note.str();
}

// The precision `hw` runs a profile's in. Autocast saves the same bytes with
// either half type, so where a chip lacks the profiled one (bf16 before
// Ampere; a CPU profile can only be amp-bf16) the other prices its matmuls,
// as a note says.
std::string precision_on(const HardwareSpec& hw, const std::string& precision, std::vector<std::string>& notes) {
  const auto has = [&](const std::string& path) {
    const auto it = hw.peak_flops.find(path);
    return it != hw.peak_flops.end() && it->second.has_value();
  };
  const std::string other = precision == "amp-bf16" ? "amp-fp16" : precision == "amp-fp16" ? "amp-bf16" : "";
  if (other.empty() || has(compute_path(precision)) || !has(compute_path(other))) return precision;
  notes.push_back(hw.name + " has no " + compute_path(precision) + ": autocast's matmuls priced in " + compute_path(other) +
                  " (the same bytes)");
  return other;
}

Target catalog_target(const LayerModel& m, const HardwareSpec& hw, std::optional<double> compute_efficiency, Engine engine) {
  const auto source = catalog_entry_for(m.machine);
  if (source && source->name == hw.name) {
    Target t = profiled_target(m);
    t.name = hw.name + " (profiled)";
    return t;
  }
  Target t;
  t.name = hw.name;
  t.profiled = false;
  t.gpu = true;
  t.memory_bytes = hw.memory_bytes;
  t.h2d_bytes_per_s = hw.h2d_bandwidth;
  t.d2h_bytes_per_s = hw.d2h_bandwidth;
  const double peak = hw.peak_for(precision_on(hw, m.precision, t.notes));
  const double bandwidth = hw.memory_bandwidth;

  const double compute = compute_efficiency.value_or(typical_compute_efficiency);
  RooflineFit eta{"", compute, typical_memory_efficiency, compute, typical_memory_efficiency};
  const bool fitted = m.roofline.has_value();
  const bool by_kernels = !fitted && !compute_efficiency;
  const std::string origin = !m.on_gpu() ? "the profile is from a CPU"
                             : source    ? "no roofline efficiencies could be fitted to the profile"
                                         : "the profiled GPU is not in the catalog";
  if (fitted) {
    eta = *m.roofline;
  } else if (by_kernels) {
    t.notes.push_back(origin + ": " + kernel_model_note(hw, m.precision));
    const bool materialized = std::any_of(m.layers.begin(), m.layers.end(),
                                          [](const LayerDescription& l) { return l.kind == LayerKind::attention_scores; });
    if (materialized && engine == Engine::megatron) {
      t.notes.push_back("attention's scores as Megatron-LM runs them: scaled in their product, masked in its fused softmax");
    }
  } else {
    std::ostringstream note;
    note << origin << ": GPU efficiencies assumed (compute " << compute << " as given, memory " << typical_memory_efficiency
         << ", " << typical_forward_overhead_s * 1e6 << "/" << typical_backward_overhead_s * 1e6
         << " us per layer forward/backward)";
    t.notes.push_back(note.str());
  }
  const auto kernels = std::make_shared<const KernelModel>(hw.kernels);
  const MatmulPath path{peak, hw.kernels.matmul_efficiency_for(compute_path(m.precision)), m.precision == "fp32" ? 4.0 : 2.0};
  const Fp8Recipe recipe = fp8_recipe_of(m.precision);
  std::optional<MatmulPath> fp8_path;
  if (recipe != Fp8Recipe::none) {
    hw.check_runs(m.precision);
    fp8_path = MatmulPath{hw.peak_for("fp8"), hw.kernels.matmul_efficiency_for("fp8"), 1.0};
    t.notes.push_back("FP8 (" + m.precision + "): the linear layers it converts at " + hw.name + "'s FP8 peak, the rest in bf16");
  }
  const double b = largest_batch(m);
  for (const auto& l : m.layers) {
    // Its kernels: what it runs on the target, or (priced by a roofline)
    // whether its products are FP8.
    const auto work = by_kernels || recipe != Fp8Recipe::none
                          ? std::make_shared<const LayerKernels>(layer_kernels(l, recipe, engine))
                          : nullptr;
    if (by_kernels) {
      t.forward_seconds.push_back(
          {{}, [=](double batch) { return kernel_seconds(work->forward, batch, *kernels, path, bandwidth, fp8_path); }});
      t.backward_seconds.push_back(
          {{}, [=](double batch) { return kernel_seconds(work->backward, batch, *kernels, path, bandwidth, fp8_path); }});
    } else {
      const bool in_fp8 = work && !work->forward.products.empty() && work->forward.products.front().fp8;
      const double layer_peak = in_fp8 ? fp8_path->peak_flops : peak;
      const double flops = l.forward_flops_per_sample, bytes = l.forward_bytes_moved_per_sample;
      const double fwd = std::max(flops / (layer_peak * eta.forward_compute), bytes / (bandwidth * eta.forward_memory));
      const double bwd = std::max(traits(l.kind).backward_flops_ratio * flops / (layer_peak * eta.backward_compute),
                                  2 * bytes / (bandwidth * eta.backward_memory));
      if (m.on_gpu()) {
        t.forward_seconds.push_back({{l.forward_seconds.floor, fwd, l.forward_seconds.fixed}, {}});
        t.backward_seconds.push_back({{l.backward_seconds.floor, bwd, l.backward_seconds.fixed}, {}});
      } else {
        t.forward_seconds.push_back({{0, fwd, typical_forward_overhead_s * l.repeats}, {}});
        t.backward_seconds.push_back({{0, bwd, typical_backward_overhead_s * l.repeats}, {}});
      }
    }
    t.profiled_reference_seconds.push_back(forward_seconds_at(l, b) + backward_seconds_at(l, b));
    t.reference_seconds.push_back(t.forward_seconds.back().at(b) + t.backward_seconds.back().at(b));
  }
  for (const auto& s : m.segments) {
    double profiled = 0, target = 0;
    for (size_t i = 0; i < m.layers.size(); ++i) {
      if (m.layers[i].segment != s.path) continue;
      profiled += forward_seconds_at(m.layers[i], b);
      target += t.forward_seconds[i].at(b);
    }
    t.recompute_seconds.push_back(s.recompute_seconds.times(profiled > 0 ? target / profiled : 1));
  }
  t.rest_seconds = t.rest_of(m.rest_seconds, std::vector<bool>(m.layers.size(), true));

  if (source) {
    t.optimizer_seconds = m.optimizer_seconds.times(source->memory_bandwidth / bandwidth);
  } else {
    double with_parameters = 0;
    for (const auto& l : m.layers) with_parameters += l.trainable_bytes() > 0 ? l.repeats : 0;
    t.optimizer_seconds = {
        0, 0, optimizer_bytes_moved(m) / (bandwidth * eta.forward_memory) + typical_optimizer_overhead_s * with_parameters};
  }

  if (source && !m.codecs.empty()) {
    for (auto c : m.codecs) {
      c.pack_bytes_per_s *= bandwidth / source->memory_bandwidth;
      c.unpack_bytes_per_s *= bandwidth / source->memory_bandwidth;  // the seconds per call stay: dispatch, not bytes
      t.codecs.push_back(c);
    }
    for (auto i : m.inverts) {
      i.from_output_bytes_per_s *= bandwidth / source->memory_bandwidth;
      i.native_bytes_per_s *= bandwidth / source->memory_bandwidth;
      t.inverts.push_back(i);
    }
  } else {
    t.codecs = default_codecs(bandwidth / default_codec_passes);
    t.notes.push_back(std::string(m.codecs.empty() ? "the profile measured no quantize/dequantize throughput"
                                                   : "quantize/dequantize throughput measured on a CPU does not carry to a GPU") +
                      ": assumed " + rate(bandwidth / default_codec_passes) + " (1/8 of the memory bandwidth)");
    if (!m.inverts.empty()) t.notes.push_back("an inverted activation's backward, measured on a CPU, is priced as keep's");
  }
  if (!m.on_gpu()) t.notes.push_back("memory from a CPU profile, with the CUDA caching allocator's 512-byte rounding added");
  return t;
}

double optimizer_bytes_moved(const LayerModel& m) {
  double trained_bytes = 0;
  for (const auto& l : m.layers) trained_bytes += static_cast<double>(l.trainable_bytes());
  return 7 * trained_bytes;
}

void set_data_parallel(Target& target, const DataParallel& world) {
  world.check();
  target.data_parallel = world;
}

Target make_target(const LayerModel& model, const std::string& name, std::optional<double> compute_efficiency, Engine engine) {
  return make_target(model, name.empty() ? std::nullopt : std::optional<HardwareSpec>(load_hardware(name)), compute_efficiency,
                     engine);
}

Target make_target(const LayerModel& model, const std::optional<HardwareSpec>& hardware, std::optional<double> compute_efficiency,
                   Engine engine) {
  return hardware ? catalog_target(model, *hardware, compute_efficiency, engine) : profiled_target(model);
}

}  // namespace papaya::model
