#pragma once
// What the multi-rank CLI tests check of a job against one process and
// against the model: the losses, and each rank's peak.
#include <cstddef>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

namespace papaya::testing {

// `job`'s losses (train --json) are `single`'s to 1e-5 of each, at the
// first `steps` steps (every one of single's by default).
void expect_losses_of_one_process(const nlohmann::json& job, const nlohmann::json& single, const std::string& what,
                                  size_t steps = std::numeric_limits<size_t>::max());

// The pipeline stages of `predict MODEL ARGS --json`'s layout (one where it
// has no stages); a test failure and an empty list where predict fails.
nlohmann::json predicted_stages(const std::string& model_file, const std::string& args);

// A rank's measured peak within 3 % of the model's (the target).
void expect_peak_near_model(double measured, double predicted, const std::string& what);

// Each of `job`'s ranks (train --json) against its stage of `stages`
// (predicted_stages; `per_stage` adjacent ranks a stage): its static bytes
// within `static_slack` of the stage's, its peak within 3 %.
void expect_ranks_hold_their_stages(const nlohmann::json& job, const nlohmann::json& stages, size_t per_stage,
                                    double static_slack, const std::string& what);

}  // namespace papaya::testing
