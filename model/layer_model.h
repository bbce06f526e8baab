#pragma once
// The fitted per-layer performance model of one network on one machine:
// what `papaya fit PROFILE` writes to model.json ({"papaya_model": 3,
// "kind": "layers"}, configs/schemas/model-layers.schema.json) and everything
// `papaya predict` and the planner need — the layout and each layer's shape,
// and curves in the batch size b fitted to the profile. No measurement is
// needed after the fit.
//
// Memory: the profile's allocator figures of the native (keep) step at each
// layer's forward and backward, fitted alpha*b + beta; the model prices every
// other strategy as exact byte differences against them (docs/memory-model.md).
// Time: per layer max(a, k*b) + c forward and backward, through the points
// where it was timed, the recompute of each segment, the optimizer step and
// the rest of the iteration.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/curves.h"
#include "model/layer_description.h"
#include "model/network_layout.h"
#include "model/profile.h"

namespace papaya::model {

constexpr int layer_model_version = 3;  // 2: the optimizer step's peak; 3: the peaks between layers

struct LayerFit : LayerDescription {
  // Allocated bytes of the keep step: when the layer's forward starts, its
  // peak during forward, when its backward starts, its peak during backward;
  // the peaks between the layer before it in each pass and it (profile.h).
  LinearCurve forward_start, forward_peak, backward_start, backward_peak;
  LinearCurve forward_gap_peak, backward_gap_peak;
  // Each pass's scratch above its start where it was measured at batches
  // up to the probe's (model/fit/fit_profile.cpp): the peak between them is
  // the start's line plus the broken line through them, and beyond them the
  // peak's line, which runs through the last two. Empty, or cleared where
  // a model is made over for another shape: the peak's line alone.
  std::vector<Sample> forward_headroom, backward_headroom;
  // Each pass's scratch above its start with every slot stored by the
  // narrowest codec, at the profiled batches and the probe's
  // (LayerProfile::stored; the probe's taken as keep's there plus what
  // storing added to the probe's run): a broken line as forward_headroom.
  // Empty: not measured, or cleared where a model is made over for
  // another shape.
  std::vector<Sample> stored_forward_headroom, stored_backward_headroom;
  // The peak before its backward above its backward's start in that step,
  // at the profiled batches: where the code after its forward (a loss)
  // reads back what it saved.
  std::vector<Sample> stored_backward_gap_headroom;
  SaturatingCurve forward_seconds, backward_seconds;
  // Each pass's seconds where they were timed, up to the probe batch (the
  // step's at the profiled batches, the probe's at its rungs and batch):
  // the time between them is the broken line through them, and past them
  // the curve's from the nearest (model/curves.h, along_points). Empty: the
  // curve alone (a profile whose probe timed no rungs, or cleared where a
  // model is made over for another shape or split).
  std::vector<Sample> forward_timed, backward_timed;
};

// A layer's seconds in each pass at `batch` (its curve through its points).
double forward_seconds_at(const LayerFit& layer, double batch);
double backward_seconds_at(const LayerFit& layer, double batch);
// A layer's peak bytes in each pass at `batch` (LayerFit's figures).
double forward_peak_at(const LayerFit& layer, double batch);
double backward_peak_at(const LayerFit& layer, double batch);
// What storing every slot as LayerFit::stored_*_headroom were measured
// adds to each pass's scratch above its start, and to the backward gap's
// peak above the backward's start, beyond keep's at `batch` (those points
// against forward_peak_at's, backward_peak_at's and backward_gap_peak's);
// 0 where they are fewer than two.
double stored_forward_shift_at(const LayerFit& layer, double batch);
double stored_backward_shift_at(const LayerFit& layer, double batch);
double stored_backward_gap_shift_at(const LayerFit& layer, double batch);

struct SegmentFit {
  std::string path;
  // The segment's input, which a recomputed segment keeps (storage: the first
  // slot of the keep step saving the same storage, "" if none does).
  SavedTensorProfile input;
  SaturatingCurve recompute_seconds;       // its forward again, in backward
  bool returns_last_layer_output = false;  // as SegmentProfile's
};

// Per-direction roofline efficiencies, fitted on the profiled GPU.
struct RooflineFit {
  std::string hardware;                              // the catalog entry the profile was taken on
  double forward_compute = 0, forward_memory = 0;    // eta_c, eta_m of forward
  double backward_compute = 0, backward_memory = 0;  // of backward (FLOPs and bytes taken as 2x forward)
};

// Every figure of a layer model but its layers and segments: the profile it
// came from and the step's figures that are no layer's.
struct ModelWideFigures {
  int version = layer_model_version;
  std::string network, precision;
  MachineInfo machine;
  std::vector<int> batches;  // the profiled batch sizes the fit used
  int probe_batch = 0;       // the batch layers were timed at alone (0: none)

  double static_bytes = 0;        // weights + gradients + optimizer state
  LinearCurve unattributed_peak;  // calibration: measured passes' peak - the largest per-layer figure
  LinearCurve optimizer_peak;     // the optimizer step's peak (static bytes, its temporaries, the batch)
  SaturatingCurve optimizer_seconds;
  SaturatingCurve rest_seconds;  // iteration - layers - optimizer (may be negative)

  std::vector<CodecMeasurement> codecs;             // measured; empty: the target's default (target.h)
  std::vector<InvertMeasurement> inverts;           // measured; a kind without one is priced as keep's backward
  double h2d_bytes_per_s = 0, d2h_bytes_per_s = 0;  // 0: no host link (CPU)
  std::optional<RooflineFit> roofline;              // set when the profile is from a catalog GPU

  bool on_gpu() const { return machine.device.rfind("cuda", 0) == 0; }
};

struct LayerModel : ModelWideFigures {
  std::vector<LayerFit> layers;      // forward order
  std::vector<SegmentFit> segments;  // forward order

  NetworkLayout layout() const;
  // The model-wide figures alone: what a model of some of the layers starts
  // from (a copy of the whole, cleared, copies every layer first).
  LayerModel without_layers() const;
};

// JSON round trip. The reader validates the schema and what it cannot say
// (references between slots, segments whose layers are not contiguous, a
// model of another kind) and throws InputError naming the file.
nlohmann::json layer_model_to_json(const LayerModel& model);
LayerModel layer_model_from_json(const nlohmann::json& doc, const std::string& label);
LayerModel read_layer_model(const std::string& path);
void write_layer_model(const std::string& path, const LayerModel& model);

}  // namespace papaya::model
