#pragma once
// One plan's training step as the HTML report draws it (html_report.h): the
// memory at every point of the timeline by what holds it, the largest saved
// tensors there, its peak, and the plan by layer with what each decision
// saves and costs.
#include <cstdint>
#include <nlohmann/json.hpp>

#include "model/catalog/target.h"
#include "model/layer_model.h"
#include "model/plan.h"

namespace papaya::cli {

// {"plan", "peak_bytes", "peak_at", "peak_point" (the passes' highest
// point), "peak_in_optimizer_step", "labels": ["forward
// blocks.0.mlp.fc1", ...], "bands": [{"name", "bytes": [...]}] (weights,
// gradients, AdamW state, exchange buffers, gathered weights, parameter
// copies, saved tensors by stored form, codec and recompute scratch, working
// memory: the step's bytes at each label), "largest": [[[tensor, form, bytes], ...] at
// each label, the three largest saved tensors], "layers": [{"layer",
// "tensors", "segment", "bytes_saved", "seconds_added", "host_link_seconds"}]}
// at `batch` on `target`.
nlohmann::json step_timeline(const model::LayerModel& model, const model::Target& target, const model::Plan& plan, int64_t batch);

}  // namespace papaya::cli
