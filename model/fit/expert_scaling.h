#pragma once
// A mixture of many experts, profiled with a few of them. Where routing is
// forced and its experts fall into runs that route alike
// (model::busier_experts_at, model::alike_expert_runs: the experts given a
// routing more, the others but the last, the last), `limits` profiles each
// mixture block with the experts that stand for all built
// (MoeConfig::profiled_experts: of each run of three or more its first two),
// and the model fitted to that profile is made the model of all E here, in
// the form the pricing takes (model/alike_experts.h): of each such run the
// first expert standing for all but the run's last, the second renamed as
// its last; a shorter run's experts as they are. What one expert more of a
// run holds is its second's start less its first's (its saved tensors and
// the indices the block's code keeps for it); the run's second and every
// layer after it hold the run's experts not built, and every figure the
// whole network's weights, gradients and optimizer state. A standing
// expert's times are the mean of its run's two, as many times as it stands
// for; a recomputed block's forward runs the experts not built.
#include <string>
#include <vector>

#include "model/catalog/network_config.h"
#include "model/layer_model.h"

namespace papaya::model {

// `profiled`: a model of mixture blocks of the experts that stand for all
// of `runs` (profiled_expert_ids), made one of all of them; `static_bytes`:
// the whole network's weights, gradients and optimizer state. Throws
// InputError, `label` first, where a block's experts are not as many runs of
// alike layers one after another, or are not fewer than all.
LayerModel scale_experts(const LayerModel& profiled, const std::vector<ExpertRun>& runs, double static_bytes,
                         const std::string& label);

}  // namespace papaya::model
