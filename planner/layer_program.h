#pragma once
// The per-layer search's program (level_dp.h) for a plan space at its batch
// size under a memory budget: every storage option and segment recompute
// priced from PlanSpace (its added seconds, its variance, and its exact bytes
// at the points of the step, from PlanSpace::changes), grouped by the layer
// that saves each storage first, and what keep needs at every point. A
// GELU/SiLU input and the storage of the slot saving its output are decided
// together (an inverted GELU keeps its output as that slot stores it), at
// the GELU's level.
//
// Seconds are additive except swapping's, whose copies the step hides behind
// compute: an option is charged what its copies to the host take beyond the
// next layer's forward (shared with the level's other swapped storages) and
// its copy back beyond the backward of the layer after its last user — the
// real stall also depends on the other copies queued on the link, which
// evaluate() accounts for.
#include <memory>
#include <vector>

#include "model/layer_model.h"
#include "model/plan_space/plan_space.h"
#include "planner/level_dp.h"
#include "planner/variance.h"

namespace papaya::planner {

struct ProgramSettings {
  double budget_bytes = 0;
  // Bytes to add to keep's at each point (one per PlanSpace::points()): what
  // earlier rounds found the program's sums missed. Empty: none.
  std::vector<double> correction;
  double variance_weight = 0;  // seconds charged per unit of the variance proxy
  bool allow_swap = true;
  bool allow_lossy = true;  // false: only options that add no variance
};

struct LayerProgram {
  Program program;
  // What the step's peak holds beyond the largest point (evaluate() adds it
  // to every point): LayerModel::unattributed_peak at this batch.
  double unattributed_bytes = 0;
  // Per level, the storages it decides, and per choice, an option index for each.
  std::vector<std::vector<int>> level_storages;
  std::vector<std::vector<std::vector<int>>> level_options;
  std::vector<std::vector<double>> level_seconds;  // per level and choice: the seconds it adds
  // Per segment and recompute option: the input option (segment_cost's index) and its seconds.
  std::vector<std::vector<int>> segment_inputs;
  std::vector<std::vector<double>> segment_seconds;

  // A choice of the program as PlanSpace::assignment's option indices.
  model::Assignment assignment(const model::PlanSpace& space, const Choice& choice) const;
  // The seconds the program adds to keep's step for a choice.
  double seconds(const Choice& choice) const;
};

// Prices every decision of a plan space once (its exact bytes, its seconds
// and variance); build() then makes the program for a budget, corrections,
// a variance weight, with or without swapping.
class ProgramBuilder {
 public:
  ProgramBuilder(const model::LayerModel& model, const model::PlanSpace& space, const VarianceProxy& variance);
  LayerProgram build(const ProgramSettings& settings) const;

 private:
  struct Parts;
  std::shared_ptr<const Parts> parts_;
};

}  // namespace papaya::planner
