#include "tests/cli/rank_checks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tests/cli/run_papaya.h"

namespace papaya::testing {

void expect_losses_of_one_process(const nlohmann::json& job, const nlohmann::json& single, const std::string& what,
                                  size_t steps) {
  const size_t compared = std::min(steps, single["losses"].size());
  ASSERT_GE(job["losses"].size(), compared) << what;
  for (size_t i = 0; i < compared; ++i) {
    const double loss = single["losses"][i];
    EXPECT_NEAR(job["losses"][i].get<double>(), loss, 1e-5 * loss) << what << ", step " << i;
  }
}

nlohmann::json predicted_stages(const std::string& model_file, const std::string& args) {
  const Outcome predicted = run_papaya("predict " + model_file + " " + args + " --json");
  EXPECT_EQ(predicted.code, 0) << predicted.err;
  if (predicted.code != 0) return nlohmann::json::array();
  return nlohmann::json::parse(predicted.out)["plans"][0]["stages"];
}

void expect_peak_near_model(double measured, double predicted, const std::string& what) {
  EXPECT_LT(std::abs(predicted - measured), 0.03 * measured) << what << ": measured " << measured << ", model " << predicted;
}

void expect_ranks_hold_their_stages(const nlohmann::json& job, const nlohmann::json& stages, size_t per_stage,
                                    double static_slack, const std::string& what) {
  const nlohmann::json& ranks = job["ranks"];
  ASSERT_EQ(ranks.size(), per_stage * stages.size()) << what;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const nlohmann::json& stage = stages[r / per_stage];
    const std::string rank = what + ", rank " + std::to_string(r);
    EXPECT_NEAR(ranks[r]["static_bytes"].get<double>(), stage["static_bytes"].get<double>(), static_slack) << rank;
    expect_peak_near_model(ranks[r]["peak_bytes"], stage["peak_bytes"], rank);
  }
}

}  // namespace papaya::testing
