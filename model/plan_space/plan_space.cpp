// PlanSpace's construction, its index at a glance, evaluate(), and the
// conversions between plans, option indices and assignments.
#include "model/plan_space/plan_space.h"

#include "model/plan_space/internal/held.h"
#include "model/plan_space/internal/index.h"
#include "model/plan_space/internal/parts.h"
#include "model/plan_space/internal/step_time.h"
#include "model/plan_space/internal/stored_scratch.h"
#include "model/plan_space/internal/timeline.h"

namespace papaya::model {

const char* to_string(Phase phase) {
  switch (phase) {
    case Phase::forward_gap: return "before forward";
    case Phase::forward: return "forward";
    case Phase::recompute: return "recompute";
    case Phase::backward_gap: return "before backward";
    case Phase::backward: return "backward";
  }
  return "?";
}

namespace {

std::shared_ptr<const plan_space::AtBatch> priced(std::shared_ptr<const plan_space::Index> index,
                                                  std::shared_ptr<const plan_space::WorldFacts> world, int64_t batch) {
  auto at = std::make_shared<plan_space::AtBatch>(std::move(index), std::move(world), batch);
  plan_space::price_stored_scratch(*at);
  return at;
}

}  // namespace

PlanSpace::PlanSpace(const LayerModel& model, const Target& target, int64_t batch)
    : PlanSpace(priced(std::make_shared<const plan_space::Index>(model, target),
                       std::make_shared<const plan_space::WorldFacts>(model, target.data_parallel), batch)) {}

PlanSpace::PlanSpace(std::shared_ptr<const plan_space::AtBatch> at) : at_(std::move(at)) {}

PlanSpace PlanSpace::at_batch(int64_t batch) const { return PlanSpace(priced(at_->index, at_->world, batch)); }

PlanSpace PlanSpace::with_data_parallel(const DataParallel& world) const {
  return PlanSpace(priced(at_->index, std::make_shared<const plan_space::WorldFacts>(*at_->index->model, world), at_->batch));
}

int64_t PlanSpace::batch() const { return at_->batch; }
double PlanSpace::optimizer_peak_bytes() const { return at_->optimizer_peak_bytes; }
const Target& PlanSpace::target() const { return at_->target(); }
const std::vector<PlanSpace::Slot>& PlanSpace::slots() const { return at_->index->slots; }
const std::vector<PlanSpace::Storage>& PlanSpace::storages() const { return at_->index->storages; }
const std::vector<PlanSpace::Segment>& PlanSpace::segments() const { return at_->index->segments; }
const std::vector<TimelinePoint>& PlanSpace::points() const { return at_->index->points; }
double PlanSpace::slot_bytes(int slot) const { return at_->slot(slot).bytes; }
double PlanSpace::storage_bytes(int storage) const { return at_->storage_bytes(storage); }

namespace {

Estimate estimate_of(const plan_space::AtBatch& at, const plan_space::Held& held) {
  Estimate e = plan_space::memory_of(at, held);
  e.seconds = plan_space::step_seconds(at, held, &e.passes_seconds);
  const double samples = static_cast<double>(at.batch) * at.data_parallel().ranks;  // every rank's
  e.samples_per_s = e.seconds > 0 ? samples / e.seconds : 0;
  return e;
}

}  // namespace

Estimate PlanSpace::evaluate(const Assignment& assignment) const { return estimate_of(*at_, plan_space::hold(*at_, assignment)); }

std::pair<Estimate, double> PlanSpace::evaluate_with_saved_bytes(const Assignment& assignment, size_t point) const {
  const plan_space::Held held = plan_space::hold(*at_, assignment);
  return {estimate_of(*at_, held), plan_space::saved_bytes_at(*at_, held, static_cast<int>(point))};
}

std::vector<double> PlanSpace::timeline(const Assignment& assignment) const {
  return plan_space::bytes_at(*at_, plan_space::hold(*at_, assignment));
}

TimelineParts PlanSpace::timeline_parts(const Assignment& assignment) const {
  return plan_space::parts_of(*at_, plan_space::hold(*at_, assignment));
}

double PlanSpace::saved_bytes(const Assignment& assignment, size_t point) const {
  return plan_space::saved_bytes_at(*at_, plan_space::hold(*at_, assignment), static_cast<int>(point));
}

Assignment PlanSpace::assignment(const Plan& plan) const {
  const plan_space::Index& ix = *at_->index;
  Assignment a;
  a.slots.reserve(ix.slots.size());
  for (const Slot& slot : ix.slots) {
    const auto set = plan.tensors.find(slot.key);  // Plan::tensor's, by the key the index made
    a.slots.push_back(set == plan.tensors.end() ? TensorStrategy{} : set->second);
  }
  for (const Segment& s : ix.segments) a.segments.push_back(plan.segment(s.path));
  return a;
}

Assignment PlanSpace::assignment(const std::vector<int>& storage_option, const std::vector<int>& segment_option) const {
  const plan_space::Index& ix = *at_->index;
  Assignment a;
  a.slots.resize(ix.slots.size());
  a.segments.resize(ix.segments.size());
  for (size_t g = 0; g < ix.storages.size(); ++g) {
    const auto& chosen = ix.storage_entries[g].candidates.at(static_cast<size_t>(storage_option.at(g)));
    const std::vector<int>& slots = ix.storages[g].slots;
    for (size_t k = 0; k < slots.size(); ++k) a.slots[static_cast<size_t>(slots[k])] = chosen.per_slot[k];
  }
  for (size_t s = 0; s < ix.segments.size(); ++s) {
    const int choice = segment_option.at(s);
    if (choice < 0) continue;
    a.segments[s].recompute = true;
    a.segments[s].input = ix.segment_entries[s].input_candidates.at(static_cast<size_t>(choice));
  }
  return a;
}

Plan PlanSpace::plan(const Assignment& a, const std::string& name) const {
  const plan_space::Index& ix = *at_->index;
  Plan p;
  p.name = name;
  p.network = ix.model->network;
  p.batch = static_cast<int>(batch());
  std::vector<bool> recomputed;
  for (size_t s = 0; s < ix.segments.size(); ++s) {
    recomputed.push_back(a.segments[s].recompute);
    if (a.segments[s].recompute) p.segments[ix.segments[s].path] = a.segments[s];
  }
  for (size_t i = 0; i < ix.slots.size(); ++i) {
    if (!ix.active(ix.slots[i].layer, recomputed)) continue;
    if (!a.slots[i].is_keep()) p.tensors[ix.slots[i].key] = a.slots[i];
  }
  return p;
}

}  // namespace papaya::model
