// Benchmark (d) of issue 7: how long the planner takes against the number of
// layers, on synthetic GPT-like models (tests/support/synthetic_profile.h) of
// 4 to 60 blocks (48 to 664 layers), on a GPU target with a host link (every
// strategy, swapping included) and on the CPU (no swapping). For each:
//   per-layer @b    search_layers at a fixed batch (the plan space built too)
//   plan @b         make_plan at a fixed batch (PAPAYA's table included)
//   plan, batch     make_plan choosing the batch
// under a budget half-way between the static bytes and keep's peak at batch
// 64. Prints a Markdown table; the median of --repeats runs per cell.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "model/fit/fit_profile.h"
#include "model/plan.h"
#include "model/plan_space/predict.h"
#include "planner/layer_search.h"
#include "planner/planner.h"
#include "tests/support/synthetic_profile.h"

namespace {

using namespace papaya;

double median_seconds(int repeats, const std::function<void()>& run) {
  std::vector<double> seconds;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 3;
  std::vector<int> blocks = {4, 9, 18, 27, 36, 46, 60};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--repeats" && i + 1 < argc) {
      repeats = std::atoi(argv[++i]);
    } else if (arg == "--blocks" && i + 1 < argc) {
      blocks = {std::atoi(argv[++i])};
    } else {
      std::fprintf(stderr, "usage: planner_speed [--repeats N] [--blocks B]\n");
      return 2;
    }
  }
  const int64_t batch = 64;
  std::printf(
      "| target | layers | storages | per-layer @%ld (s) | plan @%ld (s) | plan, batch chosen (s) | chosen batch | samples/s vs "
      "best global |\n",
      static_cast<long>(batch), static_cast<long>(batch));
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const bool gpu : {true, false}) {
    for (int b : blocks) {
      testing::ProfileSpec spec = testing::gpt_like(b);
      if (gpu) {
        spec.device = "cuda:0";
        spec.device_name = "test gpu";
        spec.link_bytes_per_s = 1e9;
      }
      const model::LayerModel m = model::fit_profile(testing::make_profile(spec), "synthetic").model;
      const model::Target target = model::profiled_target(m);
      const double keep = model::predict(m, target, model::expand_plan_name("keep", m.layout()), batch).peak_bytes;
      const double budget = m.static_bytes + 0.5 * (keep - m.static_bytes);
      size_t storages = 0;
      const double layer_s = median_seconds(repeats, [&] {
        const model::PlanSpace space(m, target, batch);
        storages = space.storages().size();
        if (!planner::search_layers(m, space, budget)) std::abort();
      });
      const double fixed_s = median_seconds(repeats, [&] { planner::make_plan(m, target, {budget, batch, std::nullopt}); });
      planner::PlanResult chosen;
      const double chosen_s = median_seconds(repeats, [&] {
        chosen = planner::make_plan(m, target, {budget, std::nullopt, std::nullopt});
      });
      const planner::GlobalRow* best = chosen.global.fastest();
      std::printf("| %s | %zu | %zu | %.3f | %.3f | %.3f | %ld | %.3f |\n", gpu ? "GPU (swap)" : "CPU", m.layers.size(), storages,
                  layer_s, fixed_s, chosen_s, static_cast<long>(chosen.batch),
                  best ? chosen.estimate.samples_per_s / best->best.samples_per_s : 0.0);
      std::fflush(stdout);
    }
  }
  return 0;
}
