#include "model/catalog/shape_fraction.h"

#include <algorithm>
#include <cmath>
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
  // A width the config gives apart from its heads' is cut apart.
  if (t.head_width > 0 || t.latent) divisible = std::gcd(divisible, t.d_model);
  if (t.latent) {
    for (int width : {t.latent->nope_dim, t.latent->value_dim, t.latent->kv_rank, t.latent->q_rank}) {
      divisible = std::gcd(divisible, width);  // gcd(x, 0) = x: no q latent cuts nothing
    }
  }
  if (cut == ShapeCut::tokens_and_widths) divisible = std::gcd(divisible, t.seq_len);
  // Two dimensions a head at least: rotary positions rotate pairs, and a
  // head of one dimension takes other kernels (its tensors saved otherwise).
  divisible = std::gcd(divisible, t.rotary() ? t.rotary_dims() / 2 : std::max(1, t.head_dim() / 2));
  return divisible & -divisible;  // its largest power of two
}

bool routes_tokens_in_proportion(const NetworkConfig& config, int parts) {
  if (!text(config) || !config.mixture()) return true;
  const MoeConfig& moe = *config.mixture();
  const int seq_len = config.transformer().seq_len;
  if (seq_len % parts != 0) return false;
  // The routings of the fewest tokens a fraction has: shared out alike, whole
  // tokens to each expert at every fraction.
  const int64_t unit = static_cast<int64_t>(seq_len / parts) * moe.experts_per_token;
  const bool balanced = !moe.busiest_share || *moe.busiest_share * moe.experts == 1.0;
  if (balanced && unit % moe.experts == 0) return true;
  if (!moe.busiest_share) return false;  // the router's choice grows with the tokens only by chance
  // Forced, they are shared out unit by unit (routing_unit): the fewest an
  // expert gets of a unit, as MixtureOfExperts shares them.
  MoeConfig at_once = moe;
  at_once.routing_unit = 0;
  const ForcedRouting r = forced_routing(at_once, unit);
  const int64_t fewest = std::min(r.busiest, r.each);
  return fewest >= min_expert_routings;
}

NetworkConfig at_shape_fraction(const NetworkConfig& config, int k, int parts, ShapeCut cut) {
  const std::string where = (config.source.empty() ? config.name : config.source) + ": " + std::to_string(k) + "/" +
                            std::to_string(parts) + " of its " + (cut == ShapeCut::widths ? "widths" : "shape");
  if (!cuttable(config, cut)) {
    throw InputError(
        where + ": a " + to_string(config.family) + " network has no " +
        (config.family == Family::vit ? "tokens to cut but its patches: its widths alone are" : "tokens and heads to cut"));
  }
  const int limit = shape_parts_limit(config, cut);
  if (parts < 1 || limit % parts != 0) {
    throw InputError(where + ": its " + (cut == ShapeCut::widths ? "" : "tokens and ") + "head dimensions divide into " +
                     std::to_string(limit) + " parts or a power of two fewer, not " + std::to_string(parts));
  }
  if (k < 1 || k > parts) throw InputError(where + ": a fraction from 1/" + std::to_string(parts) + " to 1");
  const TransformerConfig& t = config.transformer();
  nlohmann::json doc = config.document;
  if (cut == ShapeCut::tokens_and_widths) {
    doc["seq_len"] = fraction_of(t.seq_len, k, parts);
    // A sliding window as the tokens: the keys a token sees grow with them.
    if (t.sliding_window > 0) doc["sliding_window"]["tokens"] = fraction_of(t.sliding_window, k, parts);
  }
  // The position table keeps its rows (a learned one names them where the config did not).
  if (text(config) && !t.rotary() && !doc.contains("max_positions")) doc["max_positions"] = t.max_positions;
  if (t.latent) {
    doc["d_model"] = fraction_of(t.d_model, k, parts);
    nlohmann::json& latent = doc["latent_attention"];
    for (const char* key : {"q_rank", "kv_rank", "nope_dim", "rope_dim", "value_dim"}) {
      if (latent.contains(key)) latent[key] = fraction_of(latent.at(key).get<int64_t>(), k, parts);
    }
  } else if (t.head_width > 0) {
    doc["head_dim"] = fraction_of(t.head_width, k, parts);
    doc["d_model"] = fraction_of(t.d_model, k, parts);
  } else {
    doc["d_model"] = t.heads * fraction_of(t.head_dim(), k, parts);
  }
  doc.erase("mlp_ratio");
  doc["mlp_hidden"] = fraction_of(t.mlp_hidden(), k, parts);
  if (text(config)) doc["vocab"] = fraction_of(t.vocab, k, parts);
  if (t.moe) {
    // Forced routings shared out per the smallest fraction's: each expert's
    // share grows with the tokens.
    if (cut == ShapeCut::tokens_and_widths && t.moe->busiest_share) {
      doc["moe"]["routing_unit"] = fraction_of(t.seq_len, 1, parts) * t.moe->experts_per_token;
    }
    doc["moe"]["expert_hidden"] = fraction_of(t.moe->expert_hidden, k, parts);
    if (t.moe->shared_hidden > 0) doc["moe"]["shared_hidden"] = fraction_of(t.moe->shared_hidden, k, parts);
  }
  NetworkConfig out = parse_network_config(doc, where);
  out.source = config.source;
  return out;
}

}  // namespace papaya::model
