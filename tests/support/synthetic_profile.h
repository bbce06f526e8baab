#pragma once
// Profiles whose true per-layer curves the test chooses: every measurement is
// generated from the curves, so a fit must recover them and a prediction can
// be worked out by hand.
#include <optional>
#include <string>
#include <vector>

#include "model/curves.h"
#include "model/profile.h"

namespace papaya::testing {

struct LayerSpec {
  std::string path, kind, segment;
  std::vector<model::SavedTensorProfile> saved;
  std::vector<std::string> output_saved_by;
  double output_bytes_per_sample = 0;
  // Allocated bytes of the keep step (the end figures are the start ones).
  model::LinearCurve forward_start, forward_peak, backward_start, backward_peak;
  // The peaks between the layer before and this one (none: the start figures).
  std::optional<model::LinearCurve> forward_gap_peak, backward_gap_peak;
  model::SaturatingCurve forward_s, backward_s;
  double forward_flops_per_sample = 0, forward_bytes_moved_per_sample = 0;
  int64_t parameter_bytes = 0, parameter_copy_bytes = 0;
};

struct SegmentSpec {
  std::string path;
  model::SavedTensorProfile input;
  model::SaturatingCurve recompute_s;
  bool returns_last_layer_output = false;
};

struct ProfileSpec {
  std::vector<LayerSpec> layers;
  std::vector<SegmentSpec> segments;
  std::vector<int> batches = {1, 2, 4};
  double static_bytes = 0;
  double unattributed_bytes = 0;    // the passes' peak beyond the largest layer figure
  double optimizer_step_bytes = 0;  // what the optimizer's step takes above the static bytes
  model::SaturatingCurve optimizer_s, rest_s;
  std::string device = "cpu", device_name = "test cpu";
  int64_t memory_bytes = int64_t{64} << 30;
  double link_bytes_per_s = 0;  // host link both ways (0: none)
  std::vector<model::CodecMeasurement> codecs;
  std::vector<model::PlanStep> plan_steps;
};

// A saved tensor of `numel` elements per sample (storage: its own key unless given).
model::SavedTensorProfile saved(const std::string& slot, model::SlotKind kind, double numel, int element_size,
                                const std::string& storage, std::vector<int64_t> sample_shape = {});

// A pre-norm GPT-like network of `blocks` blocks (attention with q, k, v,
// probs and a dropout mask; an MLP with a GELU whose output fc2 saves), an LM
// head and a last layer that saves nothing. Its keep figures come from a
// simple allocation rule (stored tensors + the layer's output and gradient +
// a transient), its times from lines in the batch size.
ProfileSpec gpt_like(int blocks);

// Measurements at each batch generated from the curves: layer times and
// bytes, recompute times, iteration time (the sum of the parts) and step
// peak (the larger of the passes', the largest layer figure +
// unattributed_bytes, and the optimizer step's).
model::Profile make_profile(const ProfileSpec& spec);

}  // namespace papaya::testing
