#pragma once
// Planning from scratch starts here, as `papaya recommend`, `train --plan
// auto`, `limits --network` and `validate` do: profile the network at small
// batches and fit its layer model, reporting each stage.
#include <optional>
#include <string>
#include <vector>

#include "model/catalog/network_config.h"
#include "model/catalog/target.h"
#include "model/layer_model.h"
#include "pipeline/reporter.h"

namespace papaya::pipeline {

// Small batches (with the profiler's default steps): enough for the layer
// model, quick on a CPU: 1, 2 and 4 times the network's smallest batch.
std::vector<int> default_profile_batches(const model::NetworkConfig& network);

struct ProfileAndFitRequest {
  model::NetworkConfig network;                         // parsed once by the caller, at its sequence length
  std::string device = "cpu";                           // cpu, cuda, cuda:N
  std::string precision = "fp32";                       // fp32, bf16, amp-bf16, amp-fp16
  std::string hardware;                                 // the catalog entry to target; "": the profiled machine
  std::vector<int> batches;                             // to profile; empty: default_profile_batches
  int profile_blocks = 0;                               // as profiler::ProfileOptions's (0: all if they fit)
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
  std::vector<int> batches;  // profiled
};

// Profiles and fits. A text network whose step at the largest batch would
// take over a TFLOP (a minute or more on a CPU), or whose attention squares
// pass a GiB, is profiled quickly, at 16, 32 and 64 tokens where it is
// longer, and modelled at its length (model/fit/sequence_scaling.h), as a
// notice says. Throws InputError for what the profiler refuses.
Profiled profile_and_fit(const ProfileAndFitRequest& request, Reporter& reporter);

}  // namespace papaya::pipeline
