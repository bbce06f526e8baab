#pragma once
// Pipeline parallelism over a transformer's blocks (model/parallel/
// parallel_layout.h): p stages, each a GPU (of each tensor-, context- and data-
// parallel group) holding a run of blocks; the layers before the blocks
// (embeddings) on the first, those after (the final norm, the LM head and
// loss) on the last. Blocks p does not divide go one each to the stages
// before the last, from the second-to-last back: the first stage holds the
// most micro-batches in flight and the last the LM head.
//
// A stage's model is the model of one process (a LayerModel) holding only
// its layers, for one micro-batch: each fitted keep-step figure less what
// the layers before the stage hold at its first layer's start (they run on
// other GPUs), plus the stage's input received from the stage before; its
// static state is its layers' weights (a tied LM head's on the last stage
// too: Megatron keeps a copy there and all-reduces its gradient).
#include <vector>

#include "model/layer_model.h"
#include "model/parallel/data_parallel.h"
#include "model/parallel/parallel_layout.h"

namespace papaya::model {

struct StageSpan {
  int first_block = 0, end_block = 0;  // blocks [first, end)
  bool first = true, last = true;      // holds the layers before, after the blocks
};

// The p stages of `blocks` blocks. Throws InputError where p exceeds them.
std::vector<StageSpan> pipeline_stages(int blocks, int stages);

// `rank`'s layers in `span`. Throws InputError where the span holds none.
LayerModel stage_model(const LayerModel& rank, const StageSpan& span);
// Which of `rank`'s layers stage_model(rank, span) holds, without making it.
// Throws as it does.
std::vector<bool> stage_layers(const LayerModel& rank, const StageSpan& span);
// The rest of a step (LayerModel::rest_seconds) of the stage of `rank`
// holding the layers `held`: the rank's, by the share of its layers held.
SaturatingCurve stage_rest_seconds(const LayerModel& rank, const std::vector<bool>& held);

// The state bytes of stage_model(rank, span), without making it.
StateBytes stage_state(const LayerModel& rank, const StageSpan& span);

// Micro-batches whose activations stage `stage` holds at once, at most, in
// units of all its layers' (1F1B: p - stage; interleaved with v chunks:
// the warm-up's chunks plus one, over v, as Megatron-LM's schedule runs
// them), never more than the iteration's micro-batches.
double in_flight_micro_batches(int stage, const ParallelLayout& layout);

}  // namespace papaya::model
