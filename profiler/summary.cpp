#include "profiler/summary.h"

#include "model/plan.h"

namespace papaya::profiler {

double new_saved_bytes(const model::LayerProfile& layer, int batch) {
  double bytes = 0;
  for (const auto& s : layer.saved) {
    if (s.storage != model::tensor_key(layer.path, s.slot)) continue;
    bytes += s.per_sample ? s.storage_bytes_per_sample * batch : s.storage_bytes_per_sample;
  }
  return bytes;
}

double saved_bytes(const model::Profile& profile, int batch) {
  double bytes = 0;
  for (const auto& layer : profile.layers)
    bytes += new_saved_bytes(layer, batch) + static_cast<double>(layer.parameter_copy_bytes);
  return bytes;
}

double layer_time_share(const model::Profile& profile, size_t index) {
  const model::IterationMeasurement& it = profile.iterations.at(index);
  if (it.oom || it.iteration_s <= 0) return 0;
  double layers = 0;
  for (const auto& layer : profile.layers) layers += layer.measured.at(index).forward_s + layer.measured.at(index).backward_s;
  return layers / it.iteration_s;
}

}  // namespace papaya::profiler
