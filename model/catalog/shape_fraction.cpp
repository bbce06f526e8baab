#include "model/catalog/shape_fraction.h"

#include <numeric>
#include <string>

#include "model/error.h"

namespace papaya::model {
namespace {

bool text(const NetworkConfig& config) { return config.family == Family::gpt || config.family == Family::bert; }

// A ViT's patches are its image's: only its widths are cut.
bool cuttable(const NetworkConfig& config, ShapeCut cut) {
  return text(config) || (config.family == Family::vit && cut == ShapeCut::widths);
}

// k/parts of `size`, rounded up to a whole part.
int64_t fraction_of(int64_t size, int k, int parts) { return k * ((size + parts - 1) / parts); }

}  // namespace

int shape_parts_limit(const NetworkConfig& config, ShapeCut cut) {
  if (!cuttable(config, cut)) return 1;
  const TransformerConfig& t = config.transformer();
  int divisible = t.head_dim();
  if (cut == ShapeCut::tokens_and_widths) divisible = std::gcd(divisible, t.seq_len);
  // Two dimensions a head at least: rotary positions rotate pairs, and a
  // head of one dimension takes other kernels (its tensors saved otherwise).
  divisible = std::gcd(divisible, t.rotary() ? t.rotary_dims() / 2 : std::max(1, t.head_dim() / 2));
  return divisible & -divisible;  // its largest power of two
}

bool routes_whole_tokens(const NetworkConfig& config, int parts) {
  if (!text(config) || !config.transformer().moe) return true;
  const MoeConfig& moe = *config.transformer().moe;
  const int seq_len = config.transformer().seq_len;
  // A busiest expert's share of a few tokens is whole tokens only by chance.
  if (moe.busiest_share && *moe.busiest_share * moe.experts != 1.0) return false;
  // The fewest tokens a fraction has, times the experts each goes to.
  const int64_t routed = static_cast<int64_t>(seq_len / parts) * moe.experts_per_token;
  return seq_len % parts == 0 && routed % moe.experts == 0;
}

NetworkConfig at_shape_fraction(const NetworkConfig& config, int k, int parts, ShapeCut cut) {
  const std::string where = (config.source.empty() ? config.name : config.source) + ": " + std::to_string(k) + "/" +
                            std::to_string(parts) + " of its " + (cut == ShapeCut::widths ? "widths" : "shape");
  if (!cuttable(config, cut)) {
    throw InputError(where + ": a " + to_string(config.family) + " network has no " +
                     (config.family == Family::vit ? "tokens to cut but its patches: its widths alone are"
                                                   : "tokens and heads to cut"));
  }
  const int limit = shape_parts_limit(config, cut);
  if (parts < 1 || limit % parts != 0) {
    throw InputError(where + ": its " + (cut == ShapeCut::widths ? "" : "tokens and ") + "head dimensions divide into " +
                     std::to_string(limit) + " parts or a power of two fewer, not " + std::to_string(parts));
  }
  if (k < 1 || k > parts) throw InputError(where + ": a fraction from 1/" + std::to_string(parts) + " to 1");
  const TransformerConfig& t = config.transformer();
  nlohmann::json doc = config.document;
  if (cut == ShapeCut::tokens_and_widths) doc["seq_len"] = fraction_of(t.seq_len, k, parts);
  // The position table keeps its rows (a learned one names them where the config did not).
  if (text(config) && !t.rotary() && !doc.contains("max_positions")) doc["max_positions"] = t.max_positions;
  doc["d_model"] = t.heads * fraction_of(t.head_dim(), k, parts);
  doc.erase("mlp_ratio");
  doc["mlp_hidden"] = fraction_of(t.mlp_hidden(), k, parts);
  if (text(config)) doc["vocab"] = fraction_of(t.vocab, k, parts);
  if (t.moe) {
    doc["moe"]["expert_hidden"] = fraction_of(t.moe->expert_hidden, k, parts);
    if (t.moe->shared_hidden > 0) doc["moe"]["shared_hidden"] = fraction_of(t.moe->shared_hidden, k, parts);
  }
  NetworkConfig out = parse_network_config(doc, where);
  out.source = config.source;
  return out;
}

}  // namespace papaya::model
