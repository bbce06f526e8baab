#pragma once
// The two modes of `papaya fit` (cli/commands/fit.cpp picks one and shows its result).
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/fit/fit_profile.h"
#include "model/fit/global_data_parallel.h"
#include "model/fit/global_model.h"

namespace papaya::cli {

struct FitOptions {
  std::vector<std::string> profiles;  // papaya fit PROFILE: the per-layer model
  std::optional<int> seq_len;         // with three profiles at other lengths: the model at this one
  std::string measurements;           // papaya fit --measurements FILE.csv: PAPAYA's global model
  std::string out;
  std::string budget;  // --measurements only
  // --measurements: carry the one-GPU series to these GPU counts over `link`,
  // for the networks whose gradient bytes are given ("bert-large-cased=1.34GB").
  std::vector<int> gpus;
  std::string link;
  std::vector<std::string> gradients;
};

// papaya fit PROFILE --out FILE (cli/commands/fit_profile.cpp): the model, written to
// `out`, and how well it reproduces the profile; with --seq-len N and three
// profiles at other lengths, the model at N (model/fit/sequence_scaling.h), the
// quality that of the longest profile's fit.
struct ProfileFitResult {
  std::string profile, out;
  model::ProfileFit fit;
};
ProfileFitResult fit_profile_file(const FitOptions& options);
void to_json(nlohmann::json& out, const ProfileFitResult& result);
void print_text(std::ostream& out, const ProfileFitResult& result);

// papaya fit --measurements FILE.csv (cli/commands/fit_measurements.cpp): PAPAYA's
// model of each series, written to `out` if given.
struct MeasurementsFitResult {
  model::GlobalModel fitted;
  std::string link;                          // with --gpus
  std::vector<model::ScaledSeries> on_gpus;  // with --gpus: predicted from the one-GPU series
};
MeasurementsFitResult fit_measurements_file(const FitOptions& options);
void to_json(nlohmann::json& out, const MeasurementsFitResult& result);
void print_text(std::ostream& out, const MeasurementsFitResult& result);

}  // namespace papaya::cli
