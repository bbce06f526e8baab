#pragma once
// Inside PlanSpace (plan_space.h): a plan's timeline (timeline.h) taken
// apart by what holds the bytes.
#include "model/plan_space/types.h"
#include "model/plan_space/internal/held.h"
#include "model/plan_space/internal/index.h"

namespace papaya::model::plan_space {

TimelineParts parts_of(const AtBatch& at, const Held& held);

}  // namespace papaya::model::plan_space
