#pragma once
// The types PlanSpace (plan_space.h) speaks in: points of a training step's
// timeline, a full set of decisions and its estimate, and what the space
// says of its slots, storages, segments and options. Apart from the class so
// that its internals (internal/) can use them without it.
#include <string>
#include <vector>

#include "model/slot_kind.h"
#include "model/strategy.h"

namespace papaya::model {

// A layer's forward, its recompute, its backward, and the glue between it
// and the layer before it in a pass (its gaps: profile.h). A backward gap
// comes before the recompute of a segment whose last layer it leads to.
enum class Phase { forward_gap, forward, recompute, backward_gap, backward };
const char* to_string(Phase phase);

struct TimelinePoint {
  Phase phase = Phase::forward;
  int layer = 0;
  int segment = -1;  // the enclosing segment (R points, and B/F points and gaps inside one)
};

// A full set of decisions, by index: one strategy per slot (PlanSpace::slots()
// order) and per segment (PlanSpace::segments() order). Slots of layers inside
// a recomputed segment are ignored.
struct Assignment {
  std::vector<TensorStrategy> slots;
  std::vector<SegmentStrategy> segments;
};

struct Estimate {
  double peak_bytes = 0;
  TimelinePoint peak_at;
  bool peak_in_optimizer_step = false;  // then peak_at is the passes' highest point
  double seconds = 0;                   // one iteration
  double passes_seconds = 0;            // of it, forward, backward and the rest as one rank by itself: no exchange, no optimizer
  double samples_per_s = 0;             // of all data-parallel ranks (Target::data_parallel)
  double host_bytes = 0;                // pinned host memory holding swapped tensors
};

// One kind of what a step holds (PlanSpace::timeline_parts()): "weights",
// "gradients", "AdamW state", "exchange buffers", "gathered weights",
// "parameter copies", "saved raw", "saved " + a strategy's name, "codec
// scratch", "recompute scratch", "working memory".
struct HeldBand {
  std::string name;
  std::vector<double> bytes;  // at each point
};

// A storage in one stored form ("raw" or a strategy's name), held from point
// `from` to `to`.
struct HeldTensor {
  int storage = 0;
  std::string form;
  int from = 0, to = 0;
  double bytes = 0;
};

struct TimelineParts {
  std::vector<HeldBand> bands;      // sum to timeline() at each point
  std::vector<HeldTensor> tensors;  // the saved bands, tensor by tensor
};

namespace plan_space {

struct Slot {
  std::string key;  // "path:slot"
  int layer = 0;
  int storage = 0;  // index into storages()
  SlotKind kind = SlotKind::activation;
};

struct Storage {
  std::string key;                      // "path:slot" of its first slot
  std::vector<int> slots;               // indices into slots(), forward order; empty for a
                                        // tensor no keep slot saves (a segment's input, a
                                        // GELU/SiLU output) that a plan may keep
  int first_layer = 0, last_layer = 0;  // its first and last saver
};

struct Segment {
  std::string path;
  int first_layer = 0, last_layer = 0;
  int input_storage = 0;  // the storage of its input
  // Its output's gradient, which its backward holds when recomputed beyond
  // keep's last layer (SegmentFit::returns_last_layer_output; 0 if not).
  double held_gradient_bytes_per_sample = 0;
};

// One way to store a storage or a segment's input, priced at this batch.
struct Option {
  TensorStrategy strategy;               // as asked of the whole storage
  std::vector<TensorStrategy> per_slot;  // adapt_to_slot of it, for each slot (a segment input: itself)
  double device_bytes = 0;               // held on the device between forward and backward (allocator-rounded)
  double host_bytes = 0;                 // in pinned host memory
  double codec_seconds = 0;      // quantize in forward + dequantize per use in backward (+ invert's derivative beyond keep's)
  double recompute_seconds = 0;  // the LM head's forward again (recomputed log-probabilities)
  double link_seconds = 0;       // host-link transfer time both ways: the most swapping can stall
};

struct SegmentCost {
  double recompute_seconds = 0;
  // Bytes its layers' storages (saved only inside it) and parameter copies
  // hold between forward and backward in keep: what recomputing frees,
  // before its input.
  double freed_bytes = 0;
  // Bytes held again during its backward: every storage saved inside it,
  // its layers' parameter copies, and its output's gradient where keep lets
  // that go sooner.
  double rematerialized_bytes = 0;
  std::vector<Option> input_options;  // how a recomputed segment keeps its input: [0] raw
};

// Bytes held beyond keep's (negative: fewer) at the points from..to.
struct Change {
  int from = 0, to = 0;
  double bytes = 0;
};

}  // namespace plan_space
}  // namespace papaya::model
