#pragma once
// The performance model at one batch size on one target, opened up for a
// planner: every decision a plan makes, what each option costs, and the exact
// peak memory and step time of a full set of decisions. `predict` (predict.h)
// is this evaluation of one plan; a planner searches over the same numbers.
//
// docs/memory-model.md says what the model holds and when: the timeline of
// F, R and B points, what each strategy stores, the peak, the step time with
// its swap overlap, and what a planner gets from options() and changes().
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
#include <utility>
#include <vector>

#include "model/catalog/target.h"
#include "model/layer_model.h"
#include "model/plan.h"
#include "model/plan_space/types.h"
#include "model/strategy.h"

namespace papaya::model {

namespace plan_space {
struct AtBatch;  // model/plan_space/internal/index.h
}

class PlanSpace {
 public:
  // `model` must outlive the space. Throws InputError if `batch` < 1.
  PlanSpace(const LayerModel& model, const Target& target, int64_t batch);
  // The same network and target at another batch size: shares everything
  // that does not depend on the batch, so it costs O(layers + slots).
  PlanSpace at_batch(int64_t batch) const;
  // The same network and target on another data-parallel world
  // (Target::data_parallel) at this batch: the network is not indexed
  // again, its index shared (a layout search prices a stage on many ZeRO
  // stages and rank counts). Throws InputError as set_data_parallel.
  PlanSpace with_data_parallel(const DataParallel& world) const;

  using Slot = plan_space::Slot;
  using Storage = plan_space::Storage;
  using Segment = plan_space::Segment;
  using Option = plan_space::Option;
  using SegmentCost = plan_space::SegmentCost;
  using Change = plan_space::Change;

  int64_t batch() const;
  // The optimizer step's peak, the same under every plan: a floor of evaluate().
  double optimizer_peak_bytes() const;
  const Target& target() const;
  const std::vector<Slot>& slots() const;
  const std::vector<Storage>& storages() const;
  const std::vector<Segment>& segments() const;
  const std::vector<TimelinePoint>& points() const;
  double slot_bytes(int slot) const;        // its own tensor
  double storage_bytes(int storage) const;  // the whole storage

  // The options of a storage: [0] keep, then every other strategy that
  // applies (docs/memory-model.md); the same strategies, in the same order, at every batch.
  // An attention core's probabilities recomputed: the core's forward again,
  // and its other storages (mask, dropped probabilities) let go too, which
  // their own options do not count.
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
  // The same bytes by what holds them: the rank's static state, the data-
  // parallel exchange's buffers and ZeRO-3's gathered weights, parameter
  // copies in the compute dtype, saved tensors by stored form (each of them
  // too), codecs' scratch, and the rest of keep's figures: a recomputation's
  // transients at R points, elsewhere layers' working memory and gradients
  // in flight. Bands that are 0 everywhere are left out.
  TimelineParts timeline_parts(const Assignment& assignment) const;
  // The saved bands' bytes at point `point` alone, without the timeline.
  double saved_bytes(const Assignment& assignment, size_t point) const;
  // evaluate() and saved_bytes() at `point` from one pass over what the
  // assignment holds (a network of many layers takes milliseconds a pass).
  std::pair<Estimate, double> evaluate_with_saved_bytes(const Assignment& assignment, size_t point) const;

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
  // Deciding an attention core's softmax output recomputed (its core) changes
  // every storage the core saves beside q, k and v, decided or not.
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
