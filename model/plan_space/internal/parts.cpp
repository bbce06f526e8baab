// A plan's timeline by what holds its bytes.
#include "model/plan_space/internal/parts.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "model/parallel/data_parallel.h"
#include "model/parallel/sharding.h"
#include "model/plan_space/internal/timeline.h"

namespace papaya::model::plan_space {

namespace {

// Each storage's saved copies and raw spans (`saved`) and the codec scratch
// they take (`scratch`), storage by storage.
template <typename Saved, typename Scratch>
void walk_saved(const AtBatch& at, const Held& h, Saved saved, Scratch scratch) {
  const Index& ix = *at.index;
  Changes changes;
  std::vector<StorageChange> kinds;
  for (size_t g = 0; g < ix.storages.size(); ++g) {
    changes.clear();
    kinds.clear();
    add_storage(at, static_cast<int>(g), h.storages[g], 1, changes, &kinds);
    for (size_t k = 0; k < changes.size(); ++k) {
      switch (kinds[k].kind) {
        case StorageChange::Kind::keep_storage:
        case StorageChange::Kind::stored_scratch: break;  // inside keep's figures, which the rest is
        case StorageChange::Kind::scratch: scratch(changes[k]); break;
        case StorageChange::Kind::raw:
        case StorageChange::Kind::copy: saved(static_cast<int>(g), changes[k], kinds[k]); break;
      }
    }
  }
}

// The stored forms and raw spans of the storages `h` saves for backward;
// the codec scratch they take added to `scratch`.
std::vector<HeldTensor> saved_tensors(const AtBatch& at, const Held& h, Changes& scratch) {
  std::vector<HeldTensor> tensors;
  walk_saved(
      at, h,
      [&](int storage, const Change& c, const StorageChange& kind) {
        const std::string form = kind.kind == StorageChange::Kind::raw ? "raw" : kind.strategy.name();
        tensors.push_back({storage, form, c.from, c.to, c.bytes});
      },
      [&](const Change& c) { scratch.push_back(c); });
  return tensors;
}

}  // namespace

double saved_bytes_at(const AtBatch& at, const Held& h, int point) {
  double bytes = 0;
  walk_saved(
      at, h, [&](int, const Change& c, const StorageChange&) { bytes += c.from <= point && point <= c.to ? c.bytes : 0; },
      [](const Change&) {});
  return bytes;
}

TimelineParts parts_of(const AtBatch& at, const Held& h) {
  const Index& ix = *at.index;
  const DataParallel& world = at.data_parallel();
  const size_t points = ix.points.size();
  TimelineParts parts;
  const auto band = [&](const std::string& name) -> std::vector<double>& {
    for (HeldBand& b : parts.bands) {
      if (b.name == name) return b.bytes;
    }
    parts.bands.push_back({name, std::vector<double>(points, 0.0)});
    return parts.bands.back().bytes;
  };
  const auto constant = [&](const std::string& name, double bytes) { band(name).assign(points, bytes); };

  const RankStatic whole = whole_static(*ix.model, world);
  const RankStatic rank = world.active() ? rank_static(*ix.model, world) : whole;
  constant("weights", rank.weights);
  constant("gradients", rank.gradients);
  constant("AdamW state", rank.optimizer);
  if (world.active()) {
    constant("exchange buffers", exchange_buffer_bytes(whole, world.ranks, world.zero_stage, world.bucket_bytes, world.holding));
  }
  band("gathered weights") = at.gathered_bytes;

  // Keep holds a layer's parameter copies from its F to its B point; a plan
  // lets some go sooner.
  Changes copies;
  for (size_t j = 0; j < ix.layers.size(); ++j) {
    const double copy = at.world->parameter_copy_bytes[j];
    if (copy > 0) copies.push_back({ix.layers[j].forward_at, ix.layers[j].backward_at, copy});
  }
  add_parameter_copies(at, h.runs_moms, h.recomputed, copies);
  band("parameter copies") = summed(at, copies);

  // Saved tensors by stored form, in the order the forms first appear.
  std::vector<std::string> forms;
  std::map<std::string, Changes> by_form;
  Changes scratch;
  parts.tensors = saved_tensors(at, h, scratch);
  for (const HeldTensor& t : parts.tensors) {
    if (!by_form.count(t.form)) forms.push_back(t.form);
    by_form[t.form].push_back({t.from, t.to, t.bytes});
  }
  for (const std::string& form : forms) band("saved " + form) = summed(at, by_form[form]);
  band("codec scratch") = summed(at, scratch);

  // The rest of keep's figures, and what a plan adds to them outside its
  // storages (a recomputed segment's output gradient, the LM head's chunks).
  std::vector<double> rest = bytes_at(at, h);
  for (const HeldBand& b : parts.bands) {
    for (size_t p = 0; p < points; ++p) rest[p] -= b.bytes[p];
  }
  // At R points, that rest is what recomputing the layer itself allocates.
  std::vector<double> recomputing(points, 0.0);
  for (size_t p = 0; p < points; ++p) {
    if (ix.points[p].phase == Phase::recompute) std::swap(recomputing[p], rest[p]);
  }
  band("recompute scratch") = recomputing;
  band("working memory") = rest;
  parts.bands.erase(std::remove_if(parts.bands.begin(), parts.bands.end(),
                                   [](const HeldBand& b) {
                                     return std::all_of(b.bytes.begin(), b.bytes.end(), [](double v) { return v == 0; });
                                   }),
                    parts.bands.end());
  return parts;
}

}  // namespace papaya::model::plan_space
