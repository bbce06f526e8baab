// The shape axis replayed from stored profiles: a network profiled at 1/P,
// 2/P and 3/P of its shape and whole (scripts/gpu/fraction_profiles.sh takes
// them on a GPU; bench/data/h200-qwen2-0.5b/ holds an H200's), fitted here,
// the fractions carried to the whole shape (model/fit/shape_scaling.h) and
// set against the whole profile's fit: per layer kind (the last part of a
// layer's path), forward + backward seconds at the batch; the rest of the
// step and the optimizer step; keep's step and samples/s; and the peak.
//   shape_replay PARTS BATCH FRACTION_1 FRACTION_2 FRACTION_3 WHOLE
// (each a profile; .json as `papaya profile --out` writes them). Each
// fraction's network must be papaya's own cut of the whole's
// (model/catalog/shape_fraction.h), else exit 2.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/catalog/network_config.h"
#include "model/catalog/shape_fraction.h"
#include "model/catalog/target.h"
#include "model/fit/fit_profile.h"
#include "model/fit/shape_scaling.h"
#include "model/parallel/tensor_split.h"
#include "model/plan.h"
#include "model/plan_space/predict.h"

namespace {

using namespace papaya;

model::NetworkConfig network_of(const model::Profile& p, const std::string& path) {
  return model::parse_network_config(p.network_config, path);
}

// Throws where `fraction` is not k/parts of `whole` as the shape axis cuts it.
void check_cut(const model::NetworkConfig& whole, const model::NetworkConfig& fraction, int k, int parts,
               const std::string& path) {
  const model::TransformerConfig want =
      model::at_shape_fraction(whole, k, parts, model::ShapeCut::tokens_and_widths).transformer();
  const model::TransformerConfig& got = fraction.transformer();
  if (got.seq_len != want.seq_len || got.d_model != want.d_model || got.mlp_hidden() != want.mlp_hidden() ||
      got.vocab != want.vocab) {
    throw std::runtime_error(path + ": not " + std::to_string(k) + "/" + std::to_string(parts) +
                             " of the whole network's shape as papaya cuts it");
  }
}

double percent(double carried, double whole) { return 100.0 * (carried / whole - 1); }

void row(const std::string& what, double whole, double carried) {
  std::printf("| %s | %.2f | %.2f | %+.0f %% |\n", what.c_str(), 1e3 * whole, 1e3 * carried, percent(carried, whole));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: shape_replay PARTS BATCH FRACTION_1 FRACTION_2 FRACTION_3 WHOLE\n");
    return 2;
  }
  try {
    const int parts = std::atoi(argv[1]);
    const int batch = std::atoi(argv[2]);
    const model::Profile whole_profile = model::read_profile(argv[6]);
    const model::NetworkConfig whole_network = network_of(whole_profile, argv[6]);
    std::vector<model::ModelAtFraction> fractions;
    for (int k = 1; k <= 3; ++k) {
      const std::string path = argv[2 + k];
      const model::Profile profile = model::read_profile(path);
      check_cut(whole_network, network_of(profile, path), k, parts, path);
      fractions.push_back({k, model::fit_profile(profile, path).model});
    }
    const model::LayerModel carried = model::at_full_shape(fractions, parts, model::ShapeCut::tokens_and_widths, "fractions");
    const model::LayerModel whole = model::fit_profile(whole_profile, argv[6]).model;
    if (carried.layers.size() != whole.layers.size()) {
      std::fprintf(stderr, "shape_replay: the fractions' layers are not the whole's\n");
      return 2;
    }

    // Per kind: seconds whole, carried.
    std::map<std::string, std::pair<double, double>> kinds;
    std::vector<std::string> order;
    for (size_t i = 0; i < whole.layers.size(); ++i) {
      const std::string kind = model::layer_role(whole.layers[i].path);
      if (!kinds.count(kind)) order.push_back(kind);
      auto& [w, c] = kinds[kind];
      w += whole.layers[i].forward_seconds.at(batch) + whole.layers[i].backward_seconds.at(batch);
      c += carried.layers[i].forward_seconds.at(batch) + carried.layers[i].backward_seconds.at(batch);
    }
    std::printf("| at batch %d | whole's profile, ms | from 1/%d-3/%d, ms | error |\n|---|---:|---:|---:|\n", batch, parts,
                parts);
    double layers_whole = 0, layers_carried = 0;
    for (const auto& kind : order) {
      const auto [w, c] = kinds[kind];
      layers_whole += w;
      layers_carried += c;
      row(kind, w, c);
    }
    row("**every layer**", layers_whole, layers_carried);
    row("rest of the step", whole.rest_seconds.at(batch), carried.rest_seconds.at(batch));
    row("optimizer step", whole.optimizer_seconds.at(batch), carried.optimizer_seconds.at(batch));

    const model::Plan keep = model::expand_plan_name("keep", whole.layout());
    const model::Estimate w = model::predict(whole, model::make_target(whole, ""), keep, batch);
    const model::Estimate c = model::predict(carried, model::make_target(carried, ""), keep, batch);
    row("**keep's step**", w.seconds, c.seconds);
    std::printf(
        "\nkeep at batch %d: %.2f samples/s from the whole profile, %.2f from the fractions (%+.1f %%); "
        "peak %.3f GiB, %.3f GiB (%+.2f %%)\n",
        batch, w.samples_per_s, c.samples_per_s, percent(c.samples_per_s, w.samples_per_s), w.peak_bytes / (1 << 30),
        c.peak_bytes / (1 << 30), percent(c.peak_bytes, w.peak_bytes));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shape_replay: %s\n", e.what());
    return 2;
  }
  return 0;
}
