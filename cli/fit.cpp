// papaya fit: a performance model, either per layer from a profile (what
// papaya predicts every strategy from) or PAPAYA's global model per strategy
// from runs measured anywhere.
#include "cli/commands.h"
#include "cli/fit_modes.h"
#include "cli/report.h"
#include "model/error.h"

namespace papaya::cli {

void register_fit(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "fit",
      "Fit a performance model: per layer from a profile (papaya fit PROFILE --out model.json), or PAPAYA's global "
      "model per strategy from measured runs (papaya fit --measurements FILE.csv).");
  auto options = std::make_shared<FitOptions>();
  cmd->add_option("profile", options->profiles,
                  "Profile to fit (JSON, from papaya profile); with --seq-len, three profiles of one text network at three "
                  "sequence lengths");
  cmd->add_option("--seq-len", options->seq_len,
                  "Model the network at this many tokens, from three profiles at shorter lengths (bytes: each figure's "
                  "quadratic in the tokens; times: scaled with each layer's FLOPs)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--measurements", options->measurements,
                  "CSV of measured runs with the header gpu,network,precision,strategy,batch,oom,samples_per_s,iter_s,"
                  "peak_mib (bench/data/README.md)");
  cmd->add_option("--out,-o", options->out, "Write the fitted model here (JSON)");
  cmd->add_option("--budget", options->budget,
                  "--measurements: memory budget for the largest batch (16GiB, 800MiB); default: the GPU's memory, "
                  "which a GPU outside the hardware catalog lacks");
  const auto output = add_output_options(cmd, "One JSON document instead of tables");
  cmd->callback([options, output] {
    if (!options->profiles.empty() && !options->measurements.empty()) {
      throw InputError("fit: give a profile or --measurements FILE, not both");
    }
    if (!options->profiles.empty()) {
      if (options->out.empty()) throw InputError("fit " + options->profiles.front() + ": --out FILE is required");
      if (!options->budget.empty()) throw InputError("fit: --budget applies to --measurements only");
      show(fit_profile_file(*options), *output);
    } else if (!options->measurements.empty()) {
      show(fit_measurements_file(*options), *output);
    } else {
      throw InputError("fit: give a profile (papaya fit PROFILE --out model.json) or --measurements FILE.csv");
    }
  });
}

}  // namespace papaya::cli
