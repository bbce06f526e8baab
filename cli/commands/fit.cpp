// papaya fit: a performance model, either per layer from a profile (what
// papaya predicts every strategy from) or PAPAYA's global model per strategy
// from runs measured anywhere.
#include "cli/commands/commands.h"
#include "cli/commands/fit_modes.h"
#include "cli/options/number_checks.h"
#include "cli/report/report.h"
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
      ->check(positive(options->seq_len));
  cmd->add_option("--measurements", options->measurements,
                  "CSV of measured runs with the header gpu,network,precision,strategy,batch,oom,samples_per_s,iter_s,"
                  "peak_mib (bench/data/README.md)");
  cmd->add_option("--out,-o", options->out, "Write the fitted model here (JSON)");
  cmd->add_option("--budget", options->budget,
                  "--measurements: memory budget for the largest batch (16GiB, 800MiB); default: the GPU's memory, "
                  "which a GPU outside the hardware catalog lacks");
  cmd->add_option("--gpus", options->gpus,
                  "--measurements: also predict each network's one-GPU series on these data-parallel GPU counts "
                  "(2,4,8), beside the measured ones")
      ->delimiter(',')
      ->check(within(options->gpus, 2, 65536));
  cmd->add_option("--link", options->link,
                  "With --gpus: the link between the GPUs, a catalog entry (configs/links: NVLink-2, PCIe-3-x16, ...) or a file "
                  "from papaya profile --comm --out");
  cmd->add_option("--gradients", options->gradients,
                  "With --gpus: each network's gradient bytes, NETWORK=SIZE (bert-large-cased=1.34GB: 335M fp32 gradients)")
      ->delimiter(',');
  const auto output =
      add_output_options(cmd, "One JSON document instead of tables (with --gpus: {series, link, on_gpus}; else the series)");
  cmd->callback([options, output] {
    if (!options->profiles.empty() && !options->measurements.empty()) {
      throw InputError("fit: give a profile or --measurements FILE, not both");
    }
    if (!options->profiles.empty()) {
      if (options->out.empty()) throw InputError("fit " + options->profiles.front() + ": --out FILE is required");
      if (!options->budget.empty() || !options->gpus.empty() || !options->link.empty() || !options->gradients.empty()) {
        throw InputError("fit: --budget, --gpus, --link and --gradients apply to --measurements only");
      }
      show(fit_profile_file(*options), *output);
    } else if (!options->measurements.empty()) {
      show(fit_measurements_file(*options), *output);
    } else {
      throw InputError("fit: give a profile (papaya fit PROFILE --out model.json) or --measurements FILE.csv");
    }
  });
}

}  // namespace papaya::cli
