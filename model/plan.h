#pragma once
// Plans: a strategy for every saved tensor and segment of a network. A plan
// is named by the grammar of whole-network plans —
//   keep | recompute-all | recompute-attention | quantize-{8,4,2} | adaptive-N | invert | swap
//   joined by '+', e.g. recompute-all+quantize-4, quantize-2+invert
// — or read from a JSON plan file (configs/schemas/plan.schema.json):
//   {"papaya_plan": 1, "name": "...", "network": "gpt-tiny", "batch": 32,
//    "base": "quantize-4",
//    "segments": {"blocks.0": "recompute", "blocks.*": "recompute+quantize-8"},
//    "tensors":  {"blocks.*.mlp.act:input": "invert",
//                 "blocks.1.mlp.fc1": "swap",
//                 "blocks.0.attn.scores:q": {"strategy": "quantize-8", "group": 128, "headwise": true}}}
// Keys are layer or segment paths, where '*' matches one path component and
// a component without a call's number every call of its module ("enc.0"
// names "enc.0#2" too, an imported module's second call; "enc.0#2" that one
// alone, "enc.0#1" the first alone); a tensor key "path:slot" names one slot of one layer, a bare path all slots
// of the layers at or below it (each in its natural form, see adapt_to_slot). Entries apply after `base`:
// layer keys before slot keys, wildcard keys before exact ones, every call before one call.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/network_layout.h"
#include "model/strategy.h"

namespace papaya::model {

struct Plan {
  std::string name;
  std::string network;       // the network it was made for ("" if any)
  std::optional<int> batch;  // the batch it was planned at, if any
  // Only what differs from keep: "path:slot" -> strategy, segment -> strategy.
  std::map<std::string, TensorStrategy> tensors;
  std::map<std::string, SegmentStrategy> segments;

  TensorStrategy tensor(const std::string& path, const std::string& slot) const;
  SegmentStrategy segment(const std::string& path) const;
};

// Whole-network plan names of the grammar above. Each slot takes the name's
// strategy in its natural form (adapt_to_slot), except that quantize-2
// keeps the output head's input and fused attention's q and k at 4 bits (head_input_bits).
bool is_plan_name(const std::string& text);
Plan expand_plan_name(const std::string& name, const NetworkLayout& layout);

// The global combinations papaya predicts and compares (PAPAYA's table):
// {keep, recompute-all, recompute-attention} x {-, quantize-8/4/2, adaptive-4} x {-, invert} x {-, swap}.
// `with_swap` false leaves out those that swap (no host link to swap over),
// `with_attention_cores` false those that recompute attention (a network
// whose attention is fused, or that has none, holds no probabilities).
std::vector<std::string> global_plan_names(bool with_swap, bool with_attention_cores = true);

// Whether the layout has a materialized attention core (scores, softmax,
// context) whose probabilities recompute-attention can drop.
bool has_attention_cores(const NetworkLayout& layout);

// A plan by name or by path to a plan file, checked against the layout:
// unknown paths or slots, strategies that do not apply, a plan made for
// another network are InputErrors naming the file and key.
Plan load_plan(const std::string& name_or_path, const NetworkLayout& layout, const std::string& network_name);
Plan parse_plan(const nlohmann::json& doc, const NetworkLayout& layout, const std::string& network_name,
                const std::string& label);

// The explicit form: every non-keep tensor and segment by exact key, each
// naming one call of `layout`'s ("enc.0#1" where "enc.0#2" is one too), so
// that parse_plan reads back the same plan.
nlohmann::json plan_to_json(const Plan& plan, const NetworkLayout& layout);

}  // namespace papaya::model
