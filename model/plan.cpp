#include "model/plan.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "model/error.h"
#include "model/json_file.h"
#include "model/strategy_table.h"
#include "model/units.h"

namespace papaya::model {
namespace {

constexpr char first_call_suffix[] = "#1";

// Whether `pattern` names `path` ('*' matches one component); with
// `or_below`, also any path below it ("blocks.0.mlp" names "blocks.0.mlp.fc1").
// A component names itself and, without a call's number, every call of its
// module ("enc" matches "enc#2": an imported module called twice); "#1"
// names the first call alone, whose path has no number ("enc#1" matches "enc").
bool matches(const std::string& pattern, const std::string& path, bool or_below = false) {
  const auto p = split(pattern, '.'), q = split(path, '.');
  if (or_below ? p.size() > q.size() : p.size() != q.size()) return false;
  for (size_t i = 0; i < p.size(); ++i) {
    const bool any_call = p[i].find('#') == std::string::npos && q[i].rfind(p[i] + "#", 0) == 0;
    const bool first_call = p[i] == q[i] + first_call_suffix;
    if (p[i] != "*" && p[i] != q[i] && !any_call && !first_call) return false;
  }
  return true;
}

bool has_wildcard(const std::string& key) { return key.find('*') != std::string::npos; }

// Keys applied in turn, the more specific last so that it wins: layer keys
// before slot keys, wildcards before exact keys, every call of a module
// before one call ("enc.0" before "enc.0#2").
void sort_general_first(std::vector<std::string>& keys) {
  std::stable_sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) {
    const auto rank = [](const std::string& k) {
      return 4 * (k.find(':') != std::string::npos) + 2 * !has_wildcard(k) + (k.find('#') != std::string::npos);
    };
    return rank(a) < rank(b);
  });
}

// The paths of the modules called more than once, as their first call is
// named: "enc.0" where "enc.0#2" is a layer's or a segment's path (a call's
// number ends its module's path).
std::set<std::string> called_again(const NetworkLayout& layout) {
  std::set<std::string> out;
  const auto add = [&](const std::string& path) {
    const size_t hash = path.rfind('#');
    if (hash != std::string::npos && path.find('.', hash) == std::string::npos) out.insert(path.substr(0, hash));
  };
  for (const auto& layer : layout.layers) add(layer.path);
  for (const auto& segment : layout.segments) add(segment);
  return out;
}

// `path` as a plan file names that call alone: the first of several calls
// gets "#1" (its bare path names every call).
std::string one_call(const std::string& path, const std::set<std::string>& again) {
  return again.count(path) ? path + first_call_suffix : path;
}

struct NameTerms {
  bool recompute = false, recompute_attention = false, invert = false;
  TensorStrategy tensor;  // quantize/adaptive and swap
};

// Parses a whole-network plan name; nullopt with `why` set if it is not one.
std::optional<NameTerms> parse_name(const std::string& name, std::string& why) {
  NameTerms t;
  std::vector<bool> given(plan_name_factors().size(), false);  // one term of each factor at most
  for (const auto& term : split(name, '+')) {
    const StrategyRow* row = plan_term_row(term);
    if (row && row->plan_factor < 0 && term == name) continue;  // keep, alone
    if (!row || row->plan_factor < 0 || given[static_cast<size_t>(row->plan_factor)]) {
      why = "'" + term + "' is not a term of a plan name, or is repeated";
      return std::nullopt;
    }
    given[static_cast<size_t>(row->plan_factor)] = true;
    switch (row->form) {
      case Form::recomputed: (term == recompute_attention_term ? t.recompute_attention : t.recompute) = true; break;
      case Form::inverted: t.invert = true; break;
      case Form::raw:  // keep alone is above: swap
        t.tensor.swap = true;
        break;
      case Form::quantized:
      case Form::adaptive:
        try {
          const TensorStrategy s = parse_tensor_strategy(term, "plan name");
          if (s.bits == 1) throw InputError("quantize-1 is for masks, not a whole network");
          t.tensor.form = s.form;
          t.tensor.bits = s.bits;
        } catch (const InputError& e) {
          why = e.what();
          return std::nullopt;
        }
        break;
    }
  }
  return t;
}

// The fewest bits for the output head's input (the LM head's, or the input
// of the classifier just before the cross-entropy) in a whole-network plan:
// its gradients take 2-bit noise worst of all the tensors. The LM head
// recomputes its log-probabilities from it, through a softmax; a
// classifier's weight gradient sums over one row per sample, where other
// layers' sum over every token or pixel too. At 2 bits it cost the tiny
// networks 1.5 (gpt-tiny) to 3 (resnet-tiny) points of final loss over keep's.
constexpr int head_input_bits = 4;

bool is_head_input(const NetworkLayout& layout, size_t layer, const LayoutSlot& slot) {
  if (slot.name != "input") return false;
  const bool before_loss = layer + 1 < layout.layers.size() && layout.layers[layer + 1].kind == LayerKind::cross_entropy;
  return layout.layers[layer].kind == LayerKind::lm_head || before_loss;
}

// Fused attention's q and k take those bits too: backward exponentiates
// their product again against the log-sum-exp forward took from them exact,
// so their rounding scales every probability it makes again (gpt-tiny's
// final loss under quantize-2: 5.1 % above keep's with them at 2 bits, 2.8 %
// at 4; its output at 4 bits changed nothing).
bool is_exponentiated_operand(const LayoutLayer& layer, const LayoutSlot& slot) {
  return layer.kind == LayerKind::fused_attention && (slot.name == "q" || slot.name == "k");
}

bool attention_softmax(const NetworkLayout& layout, size_t layer) {
  return attention_core_at(layout.layers, static_cast<int>(layer)).has_value();
}

// What an attention core whose softmax's output is recomputed makes again
// beside it: the dropout's mask after the softmax, the context's probabilities.
bool remade_with_attention_core(const NetworkLayout& layout, size_t layer, const LayoutSlot& slot) {
  const LayerKind kind = layout.layers[layer].kind;
  if (kind == LayerKind::dropout) return layer > 0 && attention_softmax(layout, layer - 1);
  return kind == LayerKind::attention_context && slot.name == "probs";
}

// A softmax's output is recomputed with its attention core, where it is in one.
bool recomputes_outside_a_core(const NetworkLayout& layout, size_t layer, const TensorStrategy& s) {
  return recomputes(s.form) && layout.layers[layer].kind == LayerKind::softmax && !attention_softmax(layout, layer);
}

bool inside_recomputed(const Plan& plan, const LayoutLayer& layer) {
  return !layer.segment.empty() && plan.segment(layer.segment).recompute;
}

void set_tensor(Plan& plan, const std::string& key, const TensorStrategy& s) {
  if (s.is_keep()) {
    plan.tensors.erase(key);
  } else {
    plan.tensors[key] = s;
  }
}

// Reads a tensor entry: "quantize-8" or {"strategy": "quantize-8", "group": 128, "headwise": true}.
TensorStrategy tensor_entry(const nlohmann::json& value, const std::string& where) {
  if (value.is_string()) return parse_tensor_strategy(value.get<std::string>(), where);
  TensorStrategy s = parse_tensor_strategy(value.at("strategy").get<std::string>(), where);
  s.group_size = value.value("group", s.group_size);
  s.headwise = value.value("headwise", s.headwise);
  if ((value.contains("group") || value.contains("headwise")) && !rounds_values(s.form)) {
    throw InputError(where + ": group and headwise apply to quantize-N and adaptive-N only");
  }
  return s;
}

void apply_segments(Plan& plan, const nlohmann::json& entries, const NetworkLayout& layout, const std::string& label) {
  std::vector<std::string> keys;
  for (const auto& item : entries.items()) keys.push_back(item.key());
  sort_general_first(keys);
  for (const auto& key : keys) {
    const std::string where = label + ": /segments/" + key;
    const SegmentStrategy s = parse_segment_strategy(entries.at(key).get<std::string>(), where);
    bool any = false;
    for (const auto& segment : layout.segments) {
      if (!matches(key, segment)) continue;
      any = true;
      if (s.recompute) {
        plan.segments[segment] = s;
      } else {
        plan.segments.erase(segment);
      }
    }
    if (!any) {
      std::string known = layout.segments.empty() ? "none" : layout.segments.front() + ", ...";
      throw InputError(where + ": no segment of the network matches (segments: " + known + ")");
    }
  }
}

void apply_tensors(Plan& plan, const nlohmann::json& entries, const NetworkLayout& layout, const std::string& label) {
  std::vector<std::string> keys;
  for (const auto& item : entries.items()) keys.push_back(item.key());
  sort_general_first(keys);
  for (const auto& key : keys) {
    const std::string where = label + ": /tensors/" + key;
    const TensorStrategy s = tensor_entry(entries.at(key), where);
    const size_t colon = key.rfind(':');
    const std::string pattern = key.substr(0, colon);
    const std::string slot_name = colon == std::string::npos ? "" : key.substr(colon + 1);
    bool any = false;
    for (size_t i = 0; i < layout.layers.size(); ++i) {
      const LayoutLayer& layer = layout.layers[i];
      if (!matches(pattern, layer.path, /*or_below=*/slot_name.empty())) continue;
      if (inside_recomputed(plan, layer)) {
        if (has_wildcard(key) || layer.path != pattern) continue;
        throw InputError(where + ": " + layer.path + " is inside the recomputed segment " + layer.segment +
                         ", which keeps none of its tensors");
      }
      for (const auto& slot : layer.slots) {
        if (!slot_name.empty() && slot.name != slot_name) continue;
        any = true;
        if (slot_name.empty()) {
          const TensorStrategy adapted = adapt_to_slot(layer, slot, s);
          set_tensor(plan, tensor_key(layer.path, slot.name),
                     recomputes_outside_a_core(layout, i, adapted) ? TensorStrategy{} : adapted);
        } else if (auto why = why_not(layer, slot, s)) {
          throw InputError(where + ": " + s.name() + " does not apply: " + *why);
        } else if (recomputes_outside_a_core(layout, i, s)) {
          throw InputError(where + ": recompute does not apply: " + layer.path +
                           " is no attention core's softmax (scores before it, the context after it)");
        } else {
          set_tensor(plan, tensor_key(layer.path, slot.name), s);
        }
      }
      if (!slot_name.empty() && !layer.find_slot(slot_name) && !has_wildcard(key)) {
        std::string slots;
        for (const auto& sl : layer.slots) slots += (slots.empty() ? "" : ", ") + sl.name;
        throw InputError(where + ": layer " + layer.path + " saves no '" + slot_name +
                         "' (it saves: " + (slots.empty() ? "nothing" : slots) + ")");
      }
    }
    if (!any) throw InputError(where + ": no saved tensor of the network matches");
  }
}

}  // namespace

TensorStrategy Plan::tensor(const std::string& path, const std::string& slot) const {
  const auto it = tensors.find(tensor_key(path, slot));
  return it == tensors.end() ? TensorStrategy{} : it->second;
}

SegmentStrategy Plan::segment(const std::string& path) const {
  const auto it = segments.find(path);
  return it == segments.end() ? SegmentStrategy{} : it->second;
}

bool is_plan_name(const std::string& text) {
  std::string why;
  return parse_name(text, why).has_value();
}

Plan expand_plan_name(const std::string& name, const NetworkLayout& layout) {
  std::string why;
  const auto terms = parse_name(name, why);
  if (!terms) throw InputError("plan '" + name + "': " + why + " (expected " + plan_name_grammar() + ")");
  if (terms->recompute_attention && !has_attention_cores(layout)) {
    const auto fused = std::find_if(layout.layers.begin(), layout.layers.end(),
                                    [](const LayoutLayer& l) { return l.kind == LayerKind::fused_attention; });
    throw InputError("plan '" + name + "': " + recompute_attention_term + " has nothing to drop: " +
                     (fused != layout.layers.end()
                          ? "the network's attention is fused (" + fused->path +
                                " keeps no probabilities); recompute-all recomputes whole blocks"
                          : std::string("the network has no attention core (scores, softmax, context)")));
  }
  Plan plan;
  plan.name = name;
  if (terms->recompute) {
    SegmentStrategy s;
    s.recompute = true;
    s.input.swap = terms->tensor.swap;
    if (rounds_values(terms->tensor.form)) {
      s.input.form = Form::quantized;  // an adaptive plan keeps segment inputs at its average bits
      s.input.bits = terms->tensor.bits;
    }
    for (const auto& segment : layout.segments) plan.segments[segment] = s;
  }
  for (size_t i = 0; i < layout.layers.size(); ++i) {
    const LayoutLayer& layer = layout.layers[i];
    if (inside_recomputed(plan, layer)) continue;
    for (const auto& slot : layer.slots) {
      TensorStrategy s = adapt_to_slot(layer, slot, terms->tensor);
      if (rounds_values(s.form) && !chooses_bits(s.form) && s.bits < head_input_bits &&
          (is_head_input(layout, i, slot) || is_exponentiated_operand(layer, slot))) {
        s.bits = head_input_bits;
      }
      const bool invertible = traits(layer.kind).invertible_input && slot.name == "input";
      if (terms->invert && invertible) {
        s = TensorStrategy{};
        s.form = Form::inverted;
      }
      if ((terms->recompute && traits(layer.kind).recomputes_logprobs && slot.name == "logprobs") ||
          (terms->recompute_attention && attention_softmax(layout, i))) {
        s = TensorStrategy{};
        s.form = Form::recomputed;
      } else if (terms->recompute_attention && remade_with_attention_core(layout, i, slot)) {
        s = TensorStrategy{};
      }
      set_tensor(plan, tensor_key(layer.path, slot.name), s);
    }
  }
  return plan;
}

bool has_attention_cores(const NetworkLayout& layout) {
  for (size_t i = 0; i < layout.layers.size(); ++i) {
    if (attention_softmax(layout, i)) return true;
  }
  return false;
}

std::vector<std::string> global_plan_names(bool with_swap, bool with_attention_cores) {
  // Each factor crossed with the names so far, absent first.
  std::vector<std::string> names = {""};
  for (const auto& factor : plan_name_factors()) {
    std::vector<std::string> crossed;
    for (const auto& name : names) {
      crossed.push_back(name);
      for (const auto& term : factor) {
        if (!with_swap && plan_term_row(term)->swaps) continue;
        if (!with_attention_cores && term == recompute_attention_term) continue;
        crossed.push_back(name.empty() ? term : name + "+" + term);
      }
    }
    names = crossed;
  }
  names.front() = row_of(Form::raw).plan_term;
  return names;
}

Plan parse_plan(const nlohmann::json& doc, const NetworkLayout& layout, const std::string& network_name,
                const std::string& label) {
  validate_json(doc, "plan", label);
  const std::string made_for = doc.value("network", "");
  if (!made_for.empty() && made_for != network_name) {
    throw InputError(label + ": /network: the plan was made for " + made_for + ", not " + network_name);
  }
  Plan plan = doc.contains("base") ? expand_plan_name(doc.at("base"), layout) : Plan{};
  plan.name = doc.value("name", std::filesystem::path(label).stem().string());
  plan.network = made_for;
  if (doc.contains("batch")) plan.batch = doc.at("batch").get<int>();
  if (doc.contains("segments")) apply_segments(plan, doc.at("segments"), layout, label);
  // Segments set to recompute drop whatever `base` said of their layers.
  for (auto it = plan.tensors.begin(); it != plan.tensors.end();) {
    const LayoutLayer* layer = layout.find_layer(it->first.substr(0, it->first.rfind(':')));
    it = (layer && inside_recomputed(plan, *layer)) ? plan.tensors.erase(it) : std::next(it);
  }
  if (doc.contains("tensors")) apply_tensors(plan, doc.at("tensors"), layout, label);
  return plan;
}

Plan load_plan(const std::string& name_or_path, const NetworkLayout& layout, const std::string& network_name) {
  if (is_plan_name(name_or_path)) return expand_plan_name(name_or_path, layout);
  if (!std::filesystem::exists(name_or_path)) {
    throw InputError("unknown plan '" + name_or_path + "': neither a plan name (" + plan_name_grammar() + ") nor a plan file");
  }
  return parse_plan(read_json_file(name_or_path, "plan"), layout, network_name, name_or_path);
}

nlohmann::json plan_to_json(const Plan& plan, const NetworkLayout& layout) {
  nlohmann::json doc = {{"papaya_plan", 1}, {"name", plan.name}};
  if (!plan.network.empty()) doc["network"] = plan.network;
  if (plan.batch) doc["batch"] = *plan.batch;
  const std::set<std::string> again = called_again(layout);
  nlohmann::json segments = nlohmann::json::object(), tensors = nlohmann::json::object();
  for (const auto& [path, s] : plan.segments) segments[one_call(path, again)] = s.name();
  for (const auto& [key, s] : plan.tensors) {
    const size_t colon = key.rfind(':');
    const std::string named = one_call(key.substr(0, colon), again) + key.substr(colon);
    if (s.group_size == 0 && !s.headwise) {
      tensors[named] = s.name();
    } else {
      tensors[named] = {{"strategy", s.name()}, {"group", s.group()}, {"headwise", s.headwise}};
    }
  }
  doc["segments"] = segments;
  doc["tensors"] = tensors;
  return doc;
}

}  // namespace papaya::model
