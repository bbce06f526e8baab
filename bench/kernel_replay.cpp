// The kernel model (model/catalog/layer_kernels.h) against a GPU's own
// measurements: each profile, taken on a GPU of the catalog, is priced as if
// it came from a CPU (its layers' kernels on that catalog entry) and set
// against what the GPU measured, per layer role (the last part of a layer's
// path), forward + backward, at each profiled batch; then keep's whole step
// against the profile's measured iterations.
//   kernel_replay PROFILE...   (profiles as `papaya profile --out` writes them)
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/catalog/target.h"
#include "model/fit/fit_profile.h"
#include "model/parallel/tensor_split.h"
#include "model/plan.h"
#include "model/plan_space/predict.h"

namespace {

using namespace papaya;

double percent(double model, double measured) { return 100.0 * (model / measured - 1); }

void replay(const std::string& path) {
  const model::Profile profile = model::read_profile(path);
  const model::LayerModel measured = model::fit_profile(profile, path).model;
  const auto entry = model::catalog_entry_for(measured.machine);
  if (!entry) throw std::runtime_error(path + ": not taken on a GPU of the catalog");
  model::LayerModel as_cpu = measured;  // the same layers, as a CPU profile would describe them
  as_cpu.machine.device = "cpu";
  as_cpu.roofline.reset();
  const model::Target kernels = model::catalog_target(as_cpu, *entry);

  std::printf("%s (%s, %s)\n\n| role | batch | measured ms | kernel model ms | error |\n|---|---:|---:|---:|---:|\n",
              path.c_str(), entry->name.c_str(), measured.precision.c_str());
  std::vector<std::string> order;
  std::map<std::string, std::vector<size_t>> roles;
  for (size_t i = 0; i < measured.layers.size(); ++i) {
    const std::string role = model::layer_role(measured.layers[i].path);
    if (!roles.count(role)) order.push_back(role);
    roles[role].push_back(i);
  }
  std::map<double, std::pair<double, double>> all;
  for (const auto& role : order) {
    for (double b : measured.batches) {
      double m = 0, k = 0;
      for (size_t i : roles[role]) {
        m += measured.layers[i].forward_seconds.at(b) + measured.layers[i].backward_seconds.at(b);
        k += kernels.forward_seconds[i].at(b) + kernels.backward_seconds[i].at(b);
      }
      std::printf("| %s | %.0f | %.3f | %.3f | %+.0f %% |\n", role.c_str(), b, 1e3 * m, 1e3 * k, percent(k, m));
      all[b].first += m, all[b].second += k;
    }
  }
  for (const auto& [b, sums] : all) {
    std::printf("| **every layer** | %.0f | %.3f | %.3f | %+.1f %% |\n", b, 1e3 * sums.first, 1e3 * sums.second,
                percent(sums.second, sums.first));
  }
  for (double b : measured.batches) {
    std::printf("| optimizer step | %.0f | %.3f | %.3f | %+.0f %% |\n", b, 1e3 * measured.optimizer_seconds.at(b),
                1e3 * kernels.optimizer_seconds.at(b),
                percent(kernels.optimizer_seconds.at(b), measured.optimizer_seconds.at(b)));
  }
  const model::Plan keep = model::expand_plan_name("keep", measured.layout());
  std::printf("\n| keep's step | batch | measured ms | kernel model ms | error |\n|---|---:|---:|---:|---:|\n");
  for (const auto& it : profile.iterations) {
    if (it.oom) continue;
    const double predicted = model::predict(as_cpu, kernels, keep, it.batch).seconds;
    std::printf("| every layer, the rest, the optimizer | %d | %.2f | %.2f | %+.1f %% |\n", it.batch, 1e3 * it.iteration_s,
                1e3 * predicted, percent(predicted, it.iteration_s));
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: kernel_replay PROFILE...\n");
    return 2;
  }
  try {
    for (int i = 1; i < argc; ++i) replay(argv[i]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kernel_replay: %s\n", e.what());
    return 2;
  }
  return 0;
}
