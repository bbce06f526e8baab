#pragma once
// Inside PlanSpace (plan_space.h): a plan's timeline (timeline.h) taken
// apart by what holds the bytes.
#include "model/plan_space/internal/held.h"
#include "model/plan_space/internal/index.h"
#include "model/plan_space/internal/timeline.h"
#include "model/plan_space/types.h"

namespace papaya::model::plan_space {

TimelineParts parts_of(const AtBatch& at, const Held& held);

// The bytes of the tensors `held` saves for backward (parts_of()'s saved
// bands) at `point`, without the timeline.
double saved_bytes_at(const AtBatch& at, const Held& held, int point);

}  // namespace papaya::model::plan_space
