#pragma once
// Inside PlanSpace (plan_space.h): what storing a layer's slots does to the
// scratch of its passes beyond what the timeline adds for its copies, from
// the profile's stored step (LayerFit::stored_forward_headroom). A layer of
// many ops frees each tensor it saves once that one is stored, so that its
// forward never holds them all raw as keep's does, and its backward restores
// them an op at a time, not all at once (an LSTM's time steps).
#include "model/plan_space/internal/index.h"
#include "model/plan_space/internal/pricing.h"

namespace papaya::model::plan_space {

// Sets each layer's stored shifts (LayerAtBatch) at `at`'s batch: the
// stored step's measured ones less what add_storage adds at the layer's F,
// backward gap and B points for that step's packed copies.
void price_stored_scratch(AtBatch& at);

// The shift of the pass that reads a use of a stored copy: its layer's B
// point's, or the backward gap's before it (of LayerAtBatch).
StoredShift LayerAtBatch::*stored_shift_of_use(const Index& index, const Use& u);

}  // namespace papaya::model::plan_space
