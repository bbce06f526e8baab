#pragma once
// The two modes of `papaya fit` (cli/fit.cpp picks one).
#include <string>

namespace papaya::cli {

struct FitOptions {
  std::string profile;       // papaya fit PROFILE: the per-layer model
  std::string measurements;  // papaya fit --measurements FILE.csv: PAPAYA's global model
  std::string out;
  std::string budget;  // --measurements only
  bool json = false;
};

void run_profile_fit(const FitOptions& options);       // cli/fit_profile.cpp
void run_measurements_fit(const FitOptions& options);  // cli/fit_measurements.cpp

}  // namespace papaya::cli
