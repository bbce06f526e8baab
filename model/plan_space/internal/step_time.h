#pragma once
// Inside PlanSpace (plan_space.h): the seconds of one training step under a
// plan.
#include "model/plan_space/internal/held.h"
#include "model/plan_space/internal/index.h"

namespace papaya::model::plan_space {

// The layers' forward and backward, each with the codec work of the copies it
// packs and unpacks (and an inverted activation's derivative beyond keep's),
// a recomputed segment's forward again before its backward, the LM head's
// forward again when it recomputes, the optimizer and the rest of the
// iteration, and the part of swapping that does not hide behind compute.
// `passes`: the same without the optimizer and the data-parallel exchange
// (a rank by itself), where given.
double step_seconds(const AtBatch& at, const Held& held, double* passes = nullptr);

}  // namespace papaya::model::plan_space
