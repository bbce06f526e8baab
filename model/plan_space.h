#pragma once
// The performance model at one batch size on one target, opened up for a
// planner: every decision a plan makes, what each option costs, and the exact
// peak memory and step time of a full set of decisions. `predict` (predict.h)
// is this evaluation of one plan; a planner searches over the same numbers.
//
// The memory timeline. The keep step's allocator figures are measured at each
// layer's forward (F) and backward (B); when a segment is recomputed, its
// layers' forwards rerun (R) just before its backward:
//   F[0] .. F[n-1], then backward order B[n-1] .. B[0], with R[s0] .. R[s1]
//   before B[s1] for each segment of layers s0..s1.
// A plan changes the bytes held at each point by exact differences against
// keep, per storage (the saved tensors that share one storage, deduplicated):
//   - keep holds a storage raw from its first saver's forward to that saver's
//     backward (the batch's data, all step: the training loop holds it);
//   - under a plan, the raw storage is held while the network's code still
//     holds it in forward (SavedTensorProfile::last_forward_use) and as long
//     as any slot keeps it raw; each distinct stored form (device_bytes of
//     strategy.h; slots of one storage with one strategy share it) from its
//     first saver's forward to its first saver's backward; unpacking adds
//     the slot's raw size (a mask: a byte per value) during the backward of
//     each layer that uses a packed copy;
//   - the codec's scratch (measured, CodecMeasurement) where it outgrows what
//     the layer allocates beyond its start (and output, in forward);
//   - a swapped copy is on the device only in its windows: while its layer's
//     forward and the next run, and from the backward before its last user's
//     to its first user's (one layer of prefetch);
//   - an inverted GELU/SiLU input keeps a 1-bit mask and uses its output as
//     the slot saving the output keeps it (or keeps it raw if none does);
//   - a layer's compute-dtype parameter copies (LayerFit::parameter_copy_bytes,
//     bf16), which keep holds from its F to its B point, are not held in
//     between where the layer runs its MOM Function (a slot not kept: it casts
//     again in backward), nor between F and R in a recomputed segment;
//   - recomputed LM-head log-probabilities are not stored, and the head runs
//     over lm_head_chunk_rows rows at a time instead of the whole batch;
//   - a recomputed segment keeps only its input (in the segment strategy's
//     input form); its layers hold nothing between forward and backward, and
//     hold their keep tensors again from their R point to their B point; the
//     gradient of its output stays held until its first layer's B point
//     where the output is its last layer's own (keep frees it after B of
//     that layer; a residual sum's gradient keep holds as long).
// Peak = max over the timeline (R points of recomputed segments only) + the
// step's calibration (LayerModel::unattributed_peak: what the measured step
// peak held beyond the largest per-layer figure).
//
// Step time: the layers' forward and backward, + a recomputed segment's
// forward again, + the LM head's forward again when it recomputes, +
// quantize in forward and dequantize per use in backward at the codec's
// throughput, + an inverted activation's backward from its output beyond
// keep's (InvertMeasurement), + the optimizer and the rest of the iteration, + the part of
// swapping that does not hide behind compute: copies run on one link per
// direction, a layer's copies to the host must be done before the layer two
// later starts, and a layer's copies back are issued when the layer after it
// starts its backward and must be done before its own.
//
// For a planner: the options of each storage and segment give additive
// numbers (device bytes held between forward and backward, codec and
// recompute seconds, link seconds), good for a knapsack; evaluate() is exact
// (the sharing, the timeline, the swap overlap) and costs O(layers + slots).
// A storage's options are keep and every strategy of quantize-{8,4,2},
// adaptive-4, invert, recompute, swap and their +swap forms that applies to
// one of its slots or more, each slot taking its natural form (adapt_to_slot);
// the batch's own data (held_by_caller) has keep alone, as storing it
// otherwise frees nothing.
// Adaptive-N is priced as quantize-N: the executor chooses each tensor's bits
// within that average. Any other per-slot mix is an Assignment too.
//
//   PlanSpace space(model, target, batch);
//   for each storage g: space.options(g)     // keep first; bytes and seconds at this batch
//   for each segment s: space.segment_cost(s) // recompute seconds, freed bytes, input options
//   ... choose option indices (a knapsack, a segment DP) ...
//   Estimate e = space.evaluate(space.assignment(storage_choice, segment_choice));
//   // e.peak_at says where the peak is when it is over budget; repeat.
//   space.changes({{g, o}}), space.segment_changes(s, k)  // where on the timeline decisions add or free bytes
//   space.at_batch(b)                         // the same search at another batch
//   space.plan(assignment, "name")            // the plan file to train with
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/layer_model.h"
#include "model/plan.h"
#include "model/strategy.h"
#include "model/target.h"

namespace papaya::model {

namespace plan_space {
struct AtBatch;  // model/plan_space_index.h
}

enum class Phase { forward, recompute, backward };
const char* to_string(Phase phase);

struct TimelinePoint {
  Phase phase = Phase::forward;
  int layer = 0;
  int segment = -1;  // the enclosing segment (R points, and B/F points inside one)
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
  double seconds = 0;  // one iteration
  double samples_per_s = 0;
  double host_bytes = 0;  // pinned host memory holding swapped tensors
};

class PlanSpace {
 public:
  // `model` must outlive the space. Throws InputError if `batch` < 1.
  PlanSpace(const LayerModel& model, const Target& target, int64_t batch);
  // The same network and target at another batch size: shares everything
  // that does not depend on the batch, so it costs O(layers + slots).
  PlanSpace at_batch(int64_t batch) const;

  struct Slot {
    std::string key;  // "path:slot"
    int layer = 0;
    int storage = 0;  // index into storages()
    SlotKind kind = SlotKind::activation;
  };

  struct Storage {
    std::string key;         // "path:slot" of its first slot
    std::vector<int> slots;  // indices into slots(), forward order; empty for a
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
    TensorStrategy strategy;                // as asked of the whole storage
    std::vector<TensorStrategy> per_slot;   // adapt_to_slot of it, for each slot (a segment input: itself)
    double device_bytes = 0;    // held on the device between forward and backward (allocator-rounded)
    double host_bytes = 0;      // in pinned host memory
    double codec_seconds = 0;   // quantize in forward + dequantize per use in backward (+ invert's derivative beyond keep's)
    double recompute_seconds = 0;  // the LM head's forward again (recomputed log-probabilities)
    double link_seconds = 0;    // host-link transfer time both ways: the most swapping can stall
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

  int64_t batch() const;
  const Target& target() const;
  const std::vector<Slot>& slots() const;
  const std::vector<Storage>& storages() const;
  const std::vector<Segment>& segments() const;
  const std::vector<TimelinePoint>& points() const;
  double slot_bytes(int slot) const;        // its own tensor
  double storage_bytes(int storage) const;  // the whole storage

  // The options of a storage: [0] keep, then every other strategy that
  // applies (see above); the same strategies, in the same order, at every batch.
  std::vector<Option> options(int storage) const;
  SegmentCost segment_cost(int segment) const;

  // Decisions from a plan (checked against the model's layout by load_plan),
  // or by option index: storage_option[i] indexes options(i),
  // segment_option[s] is -1 (keep) or an index into segment_cost(s).input_options.
  Assignment assignment(const Plan& plan) const;
  Assignment assignment(const std::vector<int>& storage_option, const std::vector<int>& segment_option) const;
  // The plan file form of an assignment (explicit keys, no wildcards).
  Plan plan(const Assignment& assignment, const std::string& name) const;

  // Exact peak memory and step time. Throws InputError if the assignment
  // swaps and the target has no host link.
  Estimate evaluate(const Assignment& assignment) const;
  // The bytes allocated at every point of points(), without the unattributed
  // peak (R points of segments that are not recomputed are not part of the
  // step: evaluate() skips them).
  std::vector<double> timeline(const Assignment& assignment) const;

  // Bytes held beyond keep's (negative: fewer) at the points from..to.
  struct Change {
    int from = 0, to = 0;
    double bytes = 0;
  };
  // What decisions do to the timeline, exactly: timeline() of the keep
  // assignment with only those decisions made, minus timeline() of keep.
  // Storage decisions are (storage, an index into options(storage)), about
  // different storages: a few changes near each storage's savers and one
  // across the span it is held (an inverted GELU/SiLU input includes what its
  // output's storage then holds, as its consumer's decision, if given, or
  // keep stores it); a segment decision is an index into
  // segment_cost(segment).input_options: every storage it frees and
  // rematerializes, and its input. In O(slots of the storages concerned).
  // The changes of separate calls add up to timeline() where they concern
  // different storages and do not meet: decide an inverted GELU/SiLU input
  // together with its consumer's storage; a storage with slots inside and
  // outside a recomputed segment is where a storage and a segment decision meet.
  // A layer's parameter copies are freed by the call that decides its first
  // slot, where the call leaves one of its slots not kept (so separate calls
  // never free them twice); a call on its other slots alone leaves them,
  // where timeline() frees them.
  std::vector<Change> changes(const std::vector<std::pair<int, int>>& storage_options) const;
  std::vector<Change> segment_changes(int segment, int input_option) const;

 private:
  explicit PlanSpace(std::shared_ptr<const plan_space::AtBatch> at);
  // What does not depend on the batch (shared by every batch) and the sizes
  // and times at this one.
  std::shared_ptr<const plan_space::AtBatch> at_;
};

}  // namespace papaya::model
