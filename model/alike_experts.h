#pragma once
// A mixture of experts' experts, priced once. Under balanced routing every
// expert of a block holds and does the same (under an imbalance, all but
// the busiest), and a block runs them in turn: Qwen3-30B-A3B's 48 blocks of
// 128 experts are 36,864 of its 37,491 layers. A layout search prices each
// stage under hundreds of plans, and `limits` every plan on every GPU, so
// the experts are priced as few layers: each run of alike experts in a
// block becomes its first expert standing for all but the run's last
// (LayerDescription::repeats: their saved tensors, FLOPs, weights and times
// summed) and the last as it is. Such a model is for pricing: plans and
// reports that name layers, and training, need the network's own.
//
// Why the peaks do not change: in forward each expert of a run starts with
// more saved than the one before and peaks as far above its start, so the
// run's last, kept, peaks highest; in backward the last runs first, with
// the most held. The first expert's own memory figures are kept, and the
// tensors held before it are what they were, so every plan's figures there
// are its own; every later layer holds the run's tensors in full. Times are
// sums. docs/memory-model.md ("Alike experts") says where that is exact (a
// GPU's kernels) and where not (experts each timed on their own).
#include <vector>

#include "model/layer_model.h"

namespace papaya::model {

// `model` with each run of three or more alike experts of a block (layers
// under "<block>.moe.experts.<i>.", one expert's layers after another)
// collapsed as above. Experts are alike where their layers match one for
// one: roles, kinds, segments, saved tensors and their references within
// the expert, sizes, FLOPs and each pass's memory above its start (their
// times, each measured on its own, may differ: the first's are their sum).
// An expert another layer refers to (a slot, a last use) stays as it is.
LayerModel collapse_alike_experts(LayerModel model);

// Models of one network at several sizes, to be made over into one
// (shape_scaling.h, sequence_scaling.h): each collapsed where all collapse
// alike (the same layers standing for as many experts), else left whole.
void collapse_alike_experts(const std::vector<LayerModel*>& models);

// `layer`, one expert's, made to stand for `repeats` alike experts' (it
// counts them: LayerDescription::repeats): its saved tensors, FLOPs, bytes
// moved and weights that many times over. Its times are the caller's.
void stand_for(LayerFit& layer, int repeats);

}  // namespace papaya::model
