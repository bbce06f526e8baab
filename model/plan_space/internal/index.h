#pragma once
// Inside PlanSpace (plan_space.h), not for its users: what it knows of a
// network that depends on neither the batch nor the data-parallel world
// (Index: built once, shared by every batch and world), what a world
// decides of it (WorldFacts), and its sizes and times at one batch on one
// world (AtBatch). PlanSpace's
// public Slot, Storage and Segment carry what a planner reads; the entries
// here carry the rest, one per layer, slot, storage and segment.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "model/catalog/target.h"
#include "model/layer_model.h"
#include "model/plan_space/types.h"
#include "model/profile.h"
#include "model/strategy.h"

namespace papaya::model::plan_space {

// Layers [first, end), which the step runs `repeats` times in turn (alike
// experts: each expert's layers after the one before's).
struct LayerRun {
  size_t first = 0, end = 0;
  int repeats = 1;
};

struct LayerEntry {
  int segment = -1;                                          // the enclosing segment, -1 if none
  int forward_at = -1, backward_at = -1, recompute_at = -1;  // its F, B and R points (-1: none)
  int first_slot = -1, slot_count = 0;                       // its slots: [first_slot, first_slot + slot_count)
  // The storages it makes and saves beyond its output (max-pool indices,
  // dropout masks), per sample.
  double created_bytes_per_sample = 0;
  // A GELU/SiLU's output: its storage, and the slot saving it (-1: none).
  int output_storage = -1, output_consumer_slot = -1;
  // What inverting it adds to its backward per byte of input
  // (Target::invert_extra_seconds is linear in the bytes; 0 but for GELU/SiLU).
  double invert_seconds_per_byte = 0;
  int lm_head = -1;  // an LM head: its place in Index::lm_heads (-1: none)
};

struct SlotEntry {
  const SavedTensorProfile* tensor = nullptr;  // in the model's layer
  size_t position = 0;                         // in its storage's slots
  // The point its backward reads it at: its layer's B point, or the backward
  // gap before it where the code after the layer's forward saved it (a
  // loss's log-probabilities: its backward runs there).
  int used_at = -1;
  // The first slot saving the same view of its storage (itself where none
  // before it does): slots of one view and one strategy share a stored copy
  // (executor/storage/stored.h). -1 where not measured: every slot of its storage.
  int view = -1;
};

// One option of a storage: the strategy asked of it and what each of its slots takes.
struct Candidate {
  TensorStrategy asked;
  std::vector<TensorStrategy> per_slot;
};

struct StorageEntry {
  // The attention core whose recompute makes it again in backward (its
  // probabilities, dropout mask, dropped probabilities), -1: none.
  int core = -1;
  double bytes_per_sample = 0;        // the whole storage (a tensor no slot saves: its size)
  bool grows = false;                 // with the batch
  bool held_by_caller = false;        // the batch's data: held all step whatever the plan
  int code_holds_until = 0;           // the last layer whose forward the network's code holds it through
  int released_at = -1;               // keep frees it after this point: its slots' last use (a slotless one: -1)
  std::vector<Candidate> candidates;  // its options: [0] keep
};

struct SegmentEntry {
  const SavedTensorProfile* input = nullptr;     // SegmentFit::input
  std::vector<TensorStrategy> input_candidates;  // how it keeps its input when recomputed: [0] raw
};

// An attention core: scores, softmax, an optional dropout, context. A plan
// that recomputes the softmax's output recomputes the core in backward from
// q, k and v (Korthikanti et al.'s selective recompute): every storage it
// saves beyond those is made again there, whatever their slots say.
struct AttentionCore : AttentionCoreLayers {
  int output_slot = -1;  // the softmax's output slot: the decision
};

// An LM head, whose log-probabilities a plan may recompute chunk by chunk
// (the main one, and a multi-token prediction module's).
struct LmHead {
  int layer = -1, logprobs_slot = -1, input_slot = -1;
  double rows_per_sample = 1;
  int64_t vocab = 1;
};

struct Index {
  // `model` must outlive the index.
  Index(const LayerModel& model, const Target& target);

  const LayerModel* model = nullptr;
  // Its times, codecs and capacity; not its data_parallel, which is the
  // world it was made on: a batch's is AtBatch::world's.
  Target target;
  std::vector<LayerEntry> layers;
  std::vector<Slot> slots;
  std::vector<SlotEntry> slot_entries;  // one per slot
  std::vector<Storage> storages;
  std::vector<StorageEntry> storage_entries;  // one per storage
  std::vector<Segment> segments;
  std::vector<SegmentEntry> segment_entries;  // one per segment
  // F[0] .. F[n-1], then B[n-1] .. B[0] with R[s0] .. R[s1] before B[s1] for
  // each segment of layers s0..s1.
  std::vector<TimelinePoint> points;
  std::vector<LmHead> lm_heads;  // in forward order
  std::vector<AttentionCore> cores;
  // Each slot as the profile's stored step stored it (narrowest_codec_plan());
  // empty where no layer has its figures (LayerFit::stored_forward_headroom).
  std::vector<TensorStrategy> stored_step;
  // The layers in the order a step runs them: runs of consecutive layers
  // standing for as many alike others (LayerDescription::repeats), a run
  // of each other layer alone (repeats 1).
  std::vector<LayerRun> runs;

  // By the int indices PlanSpace's types use.
  int layer_count() const { return static_cast<int>(layers.size()); }
  const LayerFit& fit(int j) const { return model->layers[static_cast<size_t>(j)]; }
  const LayerEntry& layer(int j) const { return layers[static_cast<size_t>(j)]; }
  const Slot& slot(int i) const { return slots[static_cast<size_t>(i)]; }
  const SlotEntry& slot_entry(int i) const { return slot_entries[static_cast<size_t>(i)]; }
  const Storage& storage(int g) const { return storages[static_cast<size_t>(g)]; }
  const StorageEntry& storage_entry(int g) const { return storage_entries[static_cast<size_t>(g)]; }
  const Segment& segment(int s) const { return segments[static_cast<size_t>(s)]; }
  const SegmentEntry& segment_entry(int s) const { return segment_entries[static_cast<size_t>(s)]; }

  // Whether `layer` runs its forward and backward as keep does, not
  // rematerialized by its recomputed segment (`recomputed`: per segment,
  // empty where none is).
  bool active(int layer, const std::vector<bool>& recomputed) const {
    const int s = this->layer(layer).segment;
    return s < 0 || recomputed.empty() || !recomputed[static_cast<size_t>(s)];
  }
  const AttentionCore& core(int c) const { return cores[static_cast<size_t>(c)]; }
};

// What a data-parallel world decides of a network, the same at every batch:
// its layers' weight copies, which layers are experts held apart, and the
// optimizer's ranks. A layout search prices one stage on many worlds.
struct WorldFacts {
  // Throws InputError as set_data_parallel.
  WorldFacts(const LayerModel& model, const DataParallel& world);

  DataParallel world;
  // Per layer: its half-precision weight copy as keep's figures hold it (0
  // where the world computes with the weights it holds), and whether it is
  // an expert's whose ranks are apart (model::expert_of_path).
  std::vector<double> parameter_copy_bytes;
  std::vector<bool> expert;
  // How many ranks share the optimizer's step under ZeRO
  // (model::optimizer_ranks), and the experts' part of the weights (0 but
  // where their ranks are apart).
  double optimizer_ranks = 1;
  double expert_weight_share = 0;
};

struct SlotAtBatch {
  int64_t numel = 0;
  double bytes = 0;  // its own tensor
};

// What storing a layer's slots did to one of its passes in the profile's
// stored step beyond what the timeline adds for the stored copies there
// (the copies made in forward and their codec's scratch; the tensors
// restored in backward and theirs), and the raw bytes of those copies: a
// plan's packed copies take their share of `bytes` by their raw bytes
// (stored_scratch.h). 0 where not measured.
struct StoredShift {
  double bytes = 0, raw = 0;
  // A copy of `raw_bytes` of this raw's share.
  double share(double raw_bytes) const { return raw > 0 ? bytes * raw_bytes / raw : 0; }
};

struct LayerAtBatch {
  double forward_s = 0, backward_s = 0;
  // What the layer allocates beyond its start, its output and what else it
  // saves (forward; its output too where it stores before computing it) and
  // beyond its start (backward): room a codec's scratch fits in.
  double forward_headroom = 0, backward_headroom = 0;
  // At its F point, at the backward gap before it (where the code after its
  // forward reads what it saved) and at its B point.
  StoredShift stored_forward, stored_backward_gap, stored_backward;
};

struct SegmentAtBatch {
  double recompute_s = 0;
  int64_t input_numel = 0;
  double input_bytes = 0;  // raw
};

struct AtBatch {
  // Throws InputError if `batch` < 1.
  AtBatch(std::shared_ptr<const Index> index, std::shared_ptr<const WorldFacts> world, int64_t batch);

  std::shared_ptr<const Index> index;
  std::shared_ptr<const WorldFacts> world;
  int64_t batch = 0;
  std::vector<double> keep_bytes;      // at each point, the keep step
  std::vector<double> gathered_bytes;  // at each point, of those: ZeRO-3's gathered weights
  std::vector<SlotAtBatch> slots;
  std::vector<double> storage_sizes;  // the whole storage, per storage
  std::vector<LayerAtBatch> layers;
  std::vector<SegmentAtBatch> segments;
  std::vector<double> lm_head_chunk_batches;  // each LM head's: the samples whose rows make one of its chunks
  double optimizer_s = 0, rest_s = 0, unattributed_bytes = 0;
  double parameter_gather_s = 0;    // ZeRO-1 and -2: the parameters gathered after the optimizer's step
  double optimizer_peak_bytes = 0;  // whatever the plan: activations are gone by then

  const Target& target() const { return index->target; }  // its times (the world: world->world)
  const DataParallel& data_parallel() const { return world->world; }
  const SlotAtBatch& slot(int i) const { return slots[static_cast<size_t>(i)]; }
  double storage_bytes(int g) const { return storage_sizes[static_cast<size_t>(g)]; }
  // Storage g as the allocator holds it: one block run per tensor of the
  // alike layers its first saver stands for (LayerDescription::repeats).
  double allocated_storage(int g) const;
  const LayerAtBatch& layer(int j) const { return layers[static_cast<size_t>(j)]; }
  const SegmentAtBatch& segment(int s) const { return segments[static_cast<size_t>(s)]; }
  // What recomputing an attention core costs: its layers' forward again.
  double core_recompute_seconds(int core) const;
};

}  // namespace papaya::model::plan_space
