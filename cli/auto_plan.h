#pragma once
// Planning from scratch, as `papaya recommend` and `papaya train --plan auto`
// do: profile the network at small batches, fit the layer model, and plan
// within a budget — with a progress display for each stage.
#include <optional>
#include <string>
#include <vector>

#include "model/layer_model.h"
#include "model/catalog/target.h"
#include "planner/planner.h"

namespace papaya::cli {

// Small batches (with the profiler's default steps): enough for the layer
// model, quick on a CPU.
const std::vector<int>& auto_plan_batches();

struct AutoPlanRequest {
  std::string network;
  std::string device;                              // cpu, cuda, cuda:N
  std::string precision;                           // fp32, bf16, amp-bf16, amp-fp16
  std::string hardware;                            // "" : the profiled machine
  std::vector<int> batches = auto_plan_batches();  // to profile
  std::optional<int> seq_len;                      // tokens per sample instead of the config's
  int profile_blocks = 0;                          // as profiler::ProfileOptions's (0: all if they fit)
  // One warm-up and two measured steps in one round, no probes (also chosen
  // where a step at the network's length would be slow).
  bool quick = false;
};

struct Profiled {
  model::LayerModel model;
  model::Target target;
  // How it was profiled, for people: "at batches 1, 2, 4, 5 steps each"
  // (and the token counts, where a long sequence is modelled from short ones).
  std::string how;
};

// Profiles and fits (progress on stderr). A text network whose step at the
// largest batch would take over a TFLOP (a minute or more on a CPU) is
// profiled quickly at 16, 32 and 64 tokens and modelled at its length
// (model/fit/sequence_scaling.h), as stderr says.
Profiled profile_and_fit(const AutoPlanRequest& request);

// Plans within the request (progress on stderr), at the ZeRO stage of
// `zero_stages` that gives the most samples/s where the target has
// data-parallel ranks.
planner::PlanResult plan_with_progress(const Profiled& profiled, const planner::PlanRequest& request,
                                       const std::vector<int>& zero_stages = {0});

}  // namespace papaya::cli
