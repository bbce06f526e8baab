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
#include "workflow/reporter.h"

namespace papaya::workflow {

// Small batches (with the profiler's default steps): enough for the layer
// model, quick on a CPU: 1, 2 and 4 times the network's smallest batch.
std::vector<int> default_profile_batches(const model::NetworkConfig& network);

struct ProfileAndFitRequest {
  model::NetworkConfig network;  // parsed once by the caller, at its sequence length
  std::string device = "cpu";    // cpu, cuda, cuda:N
  std::string precision;         // fp32, bf16, amp-bf16, amp-fp16; "": the network's
  std::string hardware;          // the catalog entry to target; "": the profiled machine
  std::vector<int> batches;      // to profile; empty: default_profile_batches
  int profile_blocks = 0;        // as profiler::ProfileOptions's (0: all if they fit)
  // A text transformer profiled at 1, 2 and 3 of this many parts of its
  // shape and modelled whole (model/catalog/shape_fraction.h); 1: at its own
  // shape; 0: chosen (below).
  int shape_parts = 0;
  // One warm-up and two measured steps in one round, no probes (also chosen
  // where a step at the network's length would be slow); and the network
  // cut into fractions of its shape where a step takes a tenth of a slow one.
  bool quick = false;
  // A model for pricing alone (limits): a mixture's alike experts as few
  // layers (model/alike_experts.h), collapsed before a model of fractions or
  // lengths is made whole, so that one of tens of thousands of experts'
  // layers is made and priced in seconds. Its plans name no expert's layers.
  bool alike_experts_once = false;
  // Priced on catalog entries alone (limits): from a CPU, the codecs' speed
  // measured here is never read (a catalog GPU's is assumed:
  // model/catalog/target.h), so no step is timed to calibrate it.
  bool catalog_targets_only = false;
};

struct Profiled {
  model::LayerModel model;
  model::Target target;
  // How it was profiled, for people: "at batches 1, 2, 4, 5 steps each"
  // (and the token counts, where a long sequence is modelled from short ones).
  std::string how;
  std::vector<int> batches;  // profiled
};

// Profiles and fits. A network whose step at the largest batch would take
// over a TFLOP (a minute or more on a CPU), or whose attention squares pass
// a GiB, is profiled quickly; a text transformer then at three fractions of
// its shape (a ViT, and experts that fewer tokens would split, of its
// widths), the fewest parts that make each profile a matter of seconds, 2
// of its blocks (unless asked otherwise), and modelled whole
// (model/fit/shape_scaling.h); a text network that is slow for its sequence
// alone (at 64 tokens it steps in seconds), or whose shape does not divide
// finely enough, at 16, 32 and 64 tokens, and modelled at its length
// (model/fit/sequence_scaling.h). A notice says which. Throws InputError for
// what the profiler refuses.
Profiled profile_and_fit(const ProfileAndFitRequest& request, Reporter& reporter);

}  // namespace papaya::workflow
