#pragma once
// A profile: what `papaya profile` measured of one network on one machine at
// several batch sizes, and everything the performance model needs to price a
// strategy it never ran. Written as JSON (configs/schemas/profile.schema.json,
// versioned, validated on load) by the profiler; read by `papaya fit`.
//
// Bytes are absolute allocator figures unless named *_per_sample; times are
// those of the median measured step (segments: the median run), in seconds.
#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/layer_description.h"
#include "model/network_layout.h"

namespace papaya::model {

// 2: the probes' scratch, the passes' and the optimizer step's peaks; 3: the peaks between layers, the plan steps
constexpr int profile_version = 3;

// One layer at one batch size. Its gap peaks: the allocator's peak between
// the end of the layer that ran before it in the pass and its start (the
// glue between layers: a split into heads, a residual sum, the gradient of a
// split summed from its parts); its start where nothing ran between.
struct LayerMeasurement {
  double forward_s = 0, backward_s = 0;
  int64_t forward_start_bytes = 0, forward_end_bytes = 0, forward_peak_bytes = 0;
  int64_t backward_start_bytes = 0, backward_end_bytes = 0, backward_peak_bytes = 0;
  int64_t forward_gap_peak_bytes = 0, backward_gap_peak_bytes = 0;
};

// A layer's run of the probe's (alone, or within its segment) at one batch:
// its passes' scratch above their start, and their seconds (the median over
// the probe's rounds; both 0 in a profile from before rungs were timed).
struct ProbeRung {
  int64_t batch = 0;
  int64_t forward_headroom_bytes = 0, backward_headroom_bytes = 0;
  double forward_s = 0, backward_s = 0;
  bool timed() const { return forward_s > 0 || backward_s > 0; }
};

// One layer run alone at the profile's probe batch, forward then backward
// (profiler/layer_probe.h): the per-sample cost where it has settled, and the
// scratch its passes take above their start there, which the small batches a
// whole network is profiled at may not show (oneDNN's convolution backward
// changes its scratch's shape with the batch up to 4 or 8).
struct LayerProbe {
  double forward_s = 0, backward_s = 0;
  int64_t forward_headroom_bytes = 0, backward_headroom_bytes = 0;  // peak above start
  // The same run at the two largest profiled batches and at the doublings
  // of the largest below the probe batch: where a kernel changes with the
  // batch between them (LibTorch runs a 1x1 convolution on oneDNN from a
  // batch of 16 on, on one thread: its time per sample falls by a factor of
  // ten there, and its scratch changes), and how the run differs from the
  // step at the profiled batches (a last layer whose step also runs the loss
  // after it; a gradient handed to a block in another layout than the step's).
  std::vector<ProbeRung> rungs;
};

// One segment run alone at the profile's probe batch.
struct SegmentProbe {
  double recompute_s = 0;  // what checkpointing it adds to its forward and backward (SegmentProfile)
  double between_s = 0;    // as SegmentProfile::between_s
};

// A layer's scratch at one batch in a step whose every slot the narrowest
// codec stores (LayerProfile::stored).
struct StoredHeadroom {
  int64_t batch = 0;
  int64_t forward_headroom_bytes = 0, backward_headroom_bytes = 0;  // each pass's peak above its start
  // The peak before its backward (the backward of the code after its
  // forward: a loss's) above its backward's start; none where the layer ran
  // alone or within its block (the probe batch's).
  std::optional<int64_t> backward_gap_headroom_bytes;
};

struct LayerProfile : LayerDescription {
  std::vector<LayerMeasurement> measured;  // one per Profile::batches entry (empty ones for OOM batches)
  std::optional<LayerProbe> probe;         // absent: not probed, or out of memory at the probe batch
  // Each pass's scratch above its start in a step whose every slot the
  // narrowest codec stores (narrowest_codec_plan(), strategy_table.h), at
  // the profiled batches that ran and at two and four times the largest,
  // and at the probe batch run as the probe runs it: a layer of many ops
  // frees each tensor it saves once that is stored, and restores them one op
  // at a time in backward (an LSTM's time steps), which keep's figures
  // cannot show. Batches ascending; empty: not measured.
  std::vector<StoredHeadroom> stored;
};

// One segment at each batch size: what checkpointing it adds to its forward
// and backward (its forward again in backward, less the autograd the forward
// then skips, and the checkpoint's own work; profiler/segment_recompute.h).
struct SegmentProfile {
  std::string path;
  std::vector<double> recompute_s;  // one per Profile::batches entry
  // The segment's input: what a recomputed segment keeps instead of its
  // layers' saved tensors (slot "input"; storage: the first slot of the keep
  // step that saves the same storage, "" if none does).
  SavedTensorProfile input;
  // It returns its last layer's own output (a residual block's final ReLU),
  // not a tensor formed after that layer (a pre-norm block's residual sum):
  // the gradient of that output, which keep frees after the last layer's
  // backward, a recomputed segment holds until its whole backward returns.
  bool returns_last_layer_output = false;
  // Run alone (profiler/layer_probe.h), forward and backward, less its layers'
  // times: the work between its layers (residual sums, copies), which the
  // rest of the iteration holds. One per Profile::batches entry (0 for OOM
  // ones); empty: not probed.
  std::vector<double> between_s;
  std::optional<SegmentProbe> probe;  // absent: not probed, or out of memory at the probe batch
};

// One training step at one batch size.
struct IterationMeasurement {
  int batch = 0;
  bool oom = false;  // ran out of memory: the rest is empty
  int steps = 0;     // measured steps (after warm-up)
  double iteration_s = 0, forward_s = 0, backward_s = 0, optimizer_s = 0;
  int64_t static_bytes = 0;         // weights + gradients + optimizer state
  int64_t peak_bytes = 0;           // allocator peak: the larger of the last two below
  int64_t peak_reserved_bytes = 0;  // CUDA caching allocator; = peak_bytes on CPU
  int64_t forward_end_bytes = 0;    // allocated when forward ends (before backward)
  int64_t passes_peak_bytes = 0;    // allocator peak in forward and backward
  // ... in the optimizer's step (the batch still held): in a network whose
  // activations are small against its weights, the step's peak at small
  // batches, which the layers' figures do not show.
  int64_t optimizer_peak_bytes = 0;
};

// Throughput of the executor's quantize (pack) and dequantize (unpack) code,
// in bytes of the unpacked tensor per second, and the scratch each allocates
// beyond its input and result: for r raw bytes, min(r * per_byte, max) (a
// codec working in chunks needs a bounded amount; a fused kernel none).
struct CodecMeasurement {
  int bits = 0;  // 8, 4, 2; 1 for masks
  double pack_bytes_per_s = 0, unpack_bytes_per_s = 0;
  // Seconds each call takes beyond its bytes' share (dispatch, launches,
  // bookkeeping): what makes small tensors slower per byte.
  double pack_seconds_per_call = 0, unpack_seconds_per_call = 0;
  double pack_scratch_per_byte = 0, pack_scratch_max = 0;
  double unpack_scratch_per_byte = 0, unpack_scratch_max = 0;

  double pack_seconds(double raw_bytes) const { return pack_seconds_per_call + raw_bytes / pack_bytes_per_s; }
  double unpack_seconds(double raw_bytes) const { return unpack_seconds_per_call + raw_bytes / unpack_bytes_per_s; }
  double pack_scratch(double raw_bytes) const { return std::min(raw_bytes * pack_scratch_per_byte, pack_scratch_max); }
  double unpack_scratch(double raw_bytes) const { return std::min(raw_bytes * unpack_scratch_per_byte, unpack_scratch_max); }
};

// An inverted GELU or SiLU differentiates from its output and branch bit
// (executor/storage/invert.h) where keep calls the activation's own backward
// from its input: the two rates, in bytes of the activation's input per
// second, price the difference (the branch mask's packing is the 1-bit
// codec's).
struct InvertMeasurement {
  LayerKind kind = LayerKind::gelu;  // gelu, silu
  double from_output_bytes_per_s = 0, native_bytes_per_s = 0;

  // What an inverted backward over `raw_bytes` of input takes beyond keep's.
  double extra_seconds(double raw_bytes) const {
    const double extra = raw_bytes / from_output_bytes_per_s - raw_bytes / native_bytes_per_s;
    return extra > 0 ? extra : 0;
  }
};

// A whole step under a whole-network plan (quantize-8, recompute-all) at the
// smallest profiled batch, the median of a few: what the fit calibrates the
// per-call cost of a codec and of a recomputed segment to, in a step, beyond
// what their own benchmarks show (model/fit/fit_profile.h).
struct PlanStep {
  std::string plan;
  int batch = 0;
  double iteration_s = 0;
  // A keep step at the same batch run right before it, what the plan's
  // step is compared with: a slow moment of a shared machine falls on both.
  // 0 in profiles without one (the batch's iteration is compared with).
  double keep_iteration_s = 0;
};

struct MachineInfo {
  std::string device;        // "cpu", "cuda:0"
  std::string device_name;   // "NVIDIA H100 80GB HBM3", "Intel(R) Xeon(R) ..."
  int64_t memory_bytes = 0;  // device memory (CPU: physical memory)
  int threads = 0;           // intra-op threads (CPU)
  std::string torch_version, cuda_version, papaya_version;
  // How per-layer times were taken, which says what they include:
  // "wall-clock" (CPU: host time between the layer's markers), "cupti"
  // (CUDA: device time of the kernels and copies the layer launched, gaps
  // between them excluded), "synchronized-wall-clock" (CUDA without CUPTI:
  // the device is synchronized at every marker).
  std::string timing;
};

struct Profile {
  int version = profile_version;
  std::string network;            // config name
  nlohmann::json network_config;  // the config document, as read
  std::string precision;          // "fp32" | "bf16" | "amp-bf16" | "amp-fp16"
  MachineInfo machine;
  std::vector<int> batches;
  int probe_batch = 0;  // layers and segments timed alone at it; 0: none were
  // > 0: the network_config's first this many blocks were profiled, the
  // layers below are theirs, and the fit scales them to all (block_scaling.h).
  int profiled_blocks = 0;
  std::vector<IterationMeasurement> iterations;  // one per batch
  std::vector<LayerProfile> layers;              // forward order
  std::vector<SegmentProfile> segments;          // forward order
  std::vector<CodecMeasurement> codecs;
  std::vector<InvertMeasurement> inverts;  // per activation kind (empty in older profiles)
  std::vector<PlanStep> plan_steps;
  double h2d_bytes_per_s = 0, d2h_bytes_per_s = 0;  // pinned host memory (CUDA only; 0 on CPU)

  // The layout the plans are checked against.
  NetworkLayout layout() const;
};

// JSON round trip; read_profile validates (version, schema, consistency) and
// throws InputError naming the file and what is wrong.
nlohmann::json profile_to_json(const Profile& profile);
Profile profile_from_json(const nlohmann::json& doc, const std::string& label);
Profile read_profile(const std::string& path);
void write_profile(const std::string& path, const Profile& profile);

// The JSON forms of a codec measurement and of the inverted activations' rates,
// in profiles and layer models alike.
nlohmann::json codec_to_json(const CodecMeasurement& c);
CodecMeasurement codec_from_json(const nlohmann::json& doc);  // scratch figures default to 0

// The "inverts" array of either document; absent (older files): none.
nlohmann::json inverts_to_json(const std::vector<InvertMeasurement>& inverts);
std::vector<InvertMeasurement> inverts_from_json(const nlohmann::json& doc);

}  // namespace papaya::model
