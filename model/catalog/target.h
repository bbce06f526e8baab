#pragma once
// The machine a prediction is for: the profiled machine itself, or an entry
// of the hardware catalog (a what-if). A Target carries the layer model's
// times to that machine and says, in `notes`, what it had to assume.
//
// Time on a catalog entry other than the profiled one, per layer and
// direction: from a CPU profile, or a GPU missing from the catalog, the
// time of the kernels the layer runs there (layer_kernels.h: products by
// their shapes in waves over the SMs, fused attention by its tiles,
// memory-bound passes by their bytes, each kernel's latency). From a
// profiled GPU of the catalog, the roofline
//   t(b) = max(a, b * max(flops/(peak*eta_c), bytes/(bandwidth*eta_m))) + c
// with the layer's fitted latency floor a and overhead c, the analytic FLOPs
// and bytes moved of its forward (backward: twice both), and the efficiencies
// eta fitted there (LayerModel::roofline). `--compute-efficiency` (an
// override) prices a CPU profile by that roofline too, at the given compute
// efficiency, the typical memory one below and a fixed per-layer overhead.
// The notes say which. A segment's recompute,
// and the rest of the iteration, speed up as the layers' forward (resp. the
// whole step) does at the largest profiled batch; the optimizer step, a
// memory-bound pass over weights, gradients and state, with the bandwidth.
//
// Memory carries over unchanged, except that on a GPU every allocation is
// rounded up to the CUDA caching allocator's 512-byte blocks (allocated
// bytes, not reserved): a profile counts the tensors' own bytes, on CUDA
// too, so that rounding is added to the keep step's saved tensors as well.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/catalog/hardware.h"
#include "model/curves.h"
#include "model/layer_model.h"
#include "model/parallel/data_parallel.h"
#include "model/parallel/engines.h"

namespace papaya::model {

// Typical efficiencies for a GPU papaya has not seen trained on.
constexpr double typical_compute_efficiency = 0.5;
constexpr double typical_memory_efficiency = 0.7;
constexpr double typical_forward_overhead_s = 10e-6;  // per layer: kernel launches
constexpr double typical_backward_overhead_s = 20e-6;
constexpr double typical_optimizer_overhead_s = 50e-6;  // per layer with parameters
// Quantize/dequantize throughput (bytes of the raw tensor per second) where
// the profile measured none: the ATen path makes about eight passes over the
// tensor on a GPU; on a CPU, about 1 GB/s was assumed.
constexpr double default_codec_passes = 8;
constexpr double default_cpu_codec_bytes_per_s = 1e9;
// The CUDA caching allocator rounds every allocation up to a multiple of this.
constexpr int64_t cuda_block_bytes = 512;

// A layer's seconds on a target at a batch: its fitted (or scaled) curve
// through the points it was timed at on the profiled machine, or, where
// set, its kernels' time there.
struct LayerTime {
  SaturatingCurve curve;
  std::function<double(double batch)> kernels;
  std::vector<Sample> timed;  // LayerFit::forward_timed's
  double at(double batch) const { return kernels ? kernels(batch) : along_points(curve, timed, batch); }
};

struct Target {
  std::string name;                                          // "cpu (profiled)", "H100-SXM-80GB"
  bool profiled = true;                                      // the machine the profile was taken on
  bool gpu = false;                                          // allocations are rounded to cuda_block_bytes
  double memory_bytes = 0;                                   // capacity
  double h2d_bytes_per_s = 0, d2h_bytes_per_s = 0;           // 0: no host link, so no swap
  std::vector<LayerTime> forward_seconds, backward_seconds;  // per layer
  std::vector<SaturatingCurve> recompute_seconds;            // per segment
  SaturatingCurve optimizer_seconds, rest_seconds;
  std::vector<CodecMeasurement> codecs;  // never empty
  std::vector<InvertMeasurement> inverts;
  DataParallel data_parallel;      // one rank unless set (with_data_parallel)
  std::vector<std::string> notes;  // what was assumed
  // Each layer's forward and backward seconds at the model's largest
  // profiled batch, as profiled and here: what the rest of a step is scaled
  // by. Empty where the rest is the profiled one.
  std::vector<double> profiled_reference_seconds, reference_seconds;

  bool has_host_link() const { return h2d_bytes_per_s > 0 && d2h_bytes_per_s > 0; }
  // Here, the rest of a step of the model's layers `held` alone, whose rest
  // as profiled is `rest`: scaled as those layers' time is.
  SaturatingCurve rest_of(const SaturatingCurve& rest, const std::vector<bool>& held) const;
  // Throws InputError where a memory budget is more than this target has: a
  // batch found under it would not fit (unknown capacity, 0, passes).
  void check_budget(double budget_bytes) const;
  // Bytes an allocation of `bytes` occupies on this target.
  double allocated(double bytes) const;
  // The codec of the nearest measured bit width.
  const CodecMeasurement& codec(int bits) const;
  // What an inverted `kind` activation's backward over `raw_bytes` of input
  // takes beyond keep's (0 where `kind` was not measured).
  double invert_extra_seconds(LayerKind kind, double raw_bytes) const;
};

// The profiled machine, as the model was fitted.
Target profiled_target(const LayerModel& model);
// A catalog entry; the profiled machine itself if the profile was taken on it.
// Throws InputError if the entry has no compute path for the model's precision.
// `compute_efficiency`: the matmuls' share of the peak to assume in place of
// the typical one, where the profile fitted none (a CPU profile). `engine`:
// whose kernels a layer's are where they differ (layer_kernels.h).
Target catalog_target(const LayerModel& model, const HardwareSpec& hardware,
                      std::optional<double> compute_efficiency = std::nullopt, Engine engine = Engine::papaya);
// By catalog name, or the profiled machine when `name` is empty.
Target make_target(const LayerModel& model, const std::string& name, std::optional<double> compute_efficiency = std::nullopt,
                   Engine engine = Engine::papaya);
// The same from an entry loaded already (none: the profiled machine).
Target make_target(const LayerModel& model, const std::optional<HardwareSpec>& hardware,
                   std::optional<double> compute_efficiency = std::nullopt, Engine engine = Engine::papaya);

// `target` as each of `world.ranks` data-parallel devices, exchanging over
// world.link: every prediction on it is per rank, its samples/s global.
// Throws InputError for a stage outside 0-3 or fewer than one rank.
void set_data_parallel(Target& target, const DataParallel& world);
// The catalog entry a profiled GPU is ("NVIDIA H100 80GB HBM3" ->
// H100-SXM-80GB), or nullopt for a CPU or a GPU the catalog lacks.
std::optional<HardwareSpec> catalog_entry_for(const MachineInfo& machine);

// The bytes an AdamW step moves: it reads the trained weights, their
// gradients and two moments, and writes three of them.
double optimizer_bytes_moved(const LayerModel& model);

}  // namespace papaya::model
