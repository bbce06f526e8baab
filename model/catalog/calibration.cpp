#include "model/catalog/calibration.h"

#include <algorithm>
#include <map>

#include "model/error.h"
#include "model/median.h"

namespace papaya::model {
namespace {

constexpr double no_bandwidth_limit = 1e30;            // bytes/s: the FLOPs' time alone
constexpr double large_pass_bytes = 64.0 * (1 << 20);  // a pass this large runs at its bandwidth

// The model at a ceiling of 1 everywhere and no latency: a kernel's time
// over its measured one (less the latency) is then its efficiency.
KernelModel at_full_efficiency(int sm_count) {
  KernelModel k;
  k.sm_count = sm_count;
  k.attention_forward_efficiency = k.attention_backward_efficiency = 1;
  k.memory_efficiency = 1;
  return k;
}

double element_bytes(const std::string& path) { return path == "fp32" || path == "tf32" ? 4 : 2; }

// A share of a peak as an entry may hold it (the hardware schema's bounds).
double efficiency(double share) { return std::clamp(share, 0.01, 1.0); }

}  // namespace

const char* to_string(KernelClass kind) {
  switch (kind) {
    case KernelClass::tiny: return "tiny";
    case KernelClass::memory_pass: return "memory_pass";
    case KernelClass::matmul: return "matmul";
    case KernelClass::attention_forward: return "attention_forward";
    case KernelClass::attention_backward: return "attention_backward";
  }
  return "?";
}

double causal_attention_flops(double batch_heads, double tokens, double head_dim) {
  return batch_heads * 4 * head_dim * tokens * (tokens + 1) / 2;
}

Calibration fit_kernel_model(const HardwareSpec& hw, const std::vector<KernelMeasurement>& measurements,
                             const std::string& source) {
  if (measurements.empty()) throw InputError("calibration of " + hw.name + ": nothing was measured");
  const KernelModel typical = typical_kernel_model(hw.kernels.sm_count);
  const KernelModel unit = at_full_efficiency(hw.kernels.sm_count);
  Calibration c;
  c.kernels = typical;
  c.kernels.source = source;

  std::vector<double> tiny, memory;
  std::map<std::string, std::vector<double>> matmul;
  std::vector<double> forward, backward;
  for (const auto& m : measurements) {
    if (m.kind == KernelClass::tiny) tiny.push_back(m.seconds);
  }
  if (!tiny.empty()) c.kernels.kernel_latency_s = median(tiny);
  const double latency = c.kernels.kernel_latency_s;
  for (const auto& m : measurements) {
    const double busy = m.seconds - latency;
    if (m.kind != KernelClass::memory_pass || m.bytes < large_pass_bytes || busy <= 0) continue;
    memory.push_back(efficiency(m.bytes / (hw.memory_bandwidth * busy)));
  }
  if (!memory.empty()) c.kernels.memory_efficiency = median(memory);
  for (const auto& m : measurements) {
    const double busy = m.seconds - latency;
    if (busy <= 0) continue;
    if (m.kind == KernelClass::matmul) {
      const double bytes = element_bytes(m.path) * (m.m * m.k + m.k * m.n + m.m * m.n);
      const MatmulPath path{hw.peak_for(m.path), 1, element_bytes(m.path)};
      const double compute = matmul_seconds(unit, path, m.m, m.n, m.k, no_bandwidth_limit);
      // Only products whose FLOPs, not their bytes, set their time.
      if (bytes / (hw.memory_bandwidth * c.kernels.memory_efficiency) > 0.5 * m.seconds) continue;
      matmul[m.path].push_back(efficiency(compute / busy));
    } else if (m.kind == KernelClass::attention_forward || m.kind == KernelClass::attention_backward) {
      const bool back = m.kind == KernelClass::attention_backward;
      const double flops = causal_attention_flops(m.batch_heads, m.tokens, m.head_dim) * (back ? 2.5 : 1);
      const double ideal = attention_seconds(unit, flops, m.batch_heads, m.tokens, back, hw.peak_for(m.path));
      (back ? backward : forward).push_back(efficiency(ideal / busy));
    }
  }
  for (const auto& [path, values] : matmul) c.kernels.matmul_efficiency[path] = median(values);
  if (!forward.empty()) c.kernels.attention_forward_efficiency = median(forward);
  if (!backward.empty()) c.kernels.attention_backward_efficiency = median(backward);

  const auto unmeasured = [&](bool measured, const std::string& figure) {
    if (!measured) c.typical.push_back(figure);
  };
  unmeasured(!tiny.empty(), "kernel latency");
  unmeasured(!memory.empty(), "memory efficiency");
  for (const auto& [path, value] : typical.matmul_efficiency) unmeasured(matmul.count(path) > 0, path + " products");
  unmeasured(!forward.empty(), "attention forward");
  unmeasured(!backward.empty(), "attention backward");
  return c;
}

nlohmann::json calibrated_entry(const nlohmann::json& base, const std::string& name, const Calibration& calibration,
                                const std::vector<KernelMeasurement>& measurements) {
  nlohmann::json entry = base;
  entry["name"] = name;
  entry.erase("aliases");
  entry.erase("kernel_model");
  const KernelModel& k = calibration.kernels;
  nlohmann::json sweep = nlohmann::json::array();
  for (const auto& m : measurements) {
    nlohmann::json row = {{"kind", to_string(m.kind)}, {"seconds", m.seconds}};
    if (!m.path.empty()) row["path"] = m.path;
    if (m.kind == KernelClass::matmul) row["m"] = m.m, row["n"] = m.n, row["k"] = m.k;
    if (m.kind == KernelClass::attention_forward || m.kind == KernelClass::attention_backward) {
      row["batch_heads"] = m.batch_heads, row["tokens"] = m.tokens, row["head_dim"] = m.head_dim;
    }
    if (m.kind == KernelClass::memory_pass) row["bytes"] = m.bytes;
    sweep.push_back(row);
  }
  entry["kernel_model"] = {
      {"matmul_efficiency", k.matmul_efficiency},
      {"attention_efficiency", {{"forward", k.attention_forward_efficiency}, {"backward", k.attention_backward_efficiency}}},
      {"memory_efficiency", k.memory_efficiency},
      {"kernel_latency_us", k.kernel_latency_s * 1e6},
      {"source", k.source},
      {"measurements", sweep}};
  return entry;
}

}  // namespace papaya::model
