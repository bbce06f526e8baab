#include "model/catalog/shape_fraction.h"

#include <numeric>
#include <string>

#include "model/error.h"

namespace papaya::model {
namespace {

bool text(const NetworkConfig& config) { return config.family == Family::gpt || config.family == Family::bert; }

// k/parts of `size`, rounded up to a whole part.
int64_t fraction_of(int64_t size, int k, int parts) { return k * ((size + parts - 1) / parts); }

}  // namespace

int shape_parts_limit(const NetworkConfig& config) {
  if (!text(config)) return 1;
  const TransformerConfig& t = config.transformer();
  int divisible = std::gcd(t.seq_len, t.head_dim());
  if (t.rotary()) divisible = std::gcd(divisible, t.rotary_dims() / 2);
  return divisible & -divisible;  // its largest power of two
}

NetworkConfig at_shape_fraction(const NetworkConfig& config, int k, int parts) {
  const std::string where = (config.source.empty() ? config.name : config.source) + ": " + std::to_string(k) + "/" +
                            std::to_string(parts) + " of its shape";
  if (!text(config)) throw InputError(where + ": a " + to_string(config.family) + " network has no tokens and heads to cut");
  const int limit = shape_parts_limit(config);
  if (parts < 1 || limit % parts != 0) {
    throw InputError(where + ": its tokens and head dimensions divide into " + std::to_string(limit) +
                     " parts or a power of two fewer, not " + std::to_string(parts));
  }
  if (k < 1 || k > parts) throw InputError(where + ": a fraction from 1/" + std::to_string(parts) + " to 1");
  const TransformerConfig& t = config.transformer();
  nlohmann::json doc = config.document;
  doc["seq_len"] = fraction_of(t.seq_len, k, parts);
  // The position table keeps its rows (a learned one names them where the config did not).
  if (!t.rotary() && !doc.contains("max_positions")) doc["max_positions"] = t.max_positions;
  doc["d_model"] = t.heads * fraction_of(t.head_dim(), k, parts);
  doc.erase("mlp_ratio");
  doc["mlp_hidden"] = fraction_of(t.mlp_hidden(), k, parts);
  doc["vocab"] = fraction_of(t.vocab, k, parts);
  if (t.moe) {
    doc["moe"]["expert_hidden"] = fraction_of(t.moe->expert_hidden, k, parts);
    if (t.moe->shared_hidden > 0) doc["moe"]["shared_hidden"] = fraction_of(t.moe->shared_hidden, k, parts);
  }
  NetworkConfig out = parse_network_config(doc, where);
  out.source = config.source;
  return out;
}

}  // namespace papaya::model
