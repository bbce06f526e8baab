#pragma once
// Network configs (configs/networks/*.json): what the executor builds. A
// network is named by its config name ("gpt-tiny") or by a path to a file.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "model/catalog/rotary_frequencies.h"
#include "model/catalog/weight_format.h"

namespace papaya::model {

enum class Family { gpt, bert, vit, resnet, mlp, torchscript };

// LoRA fine-tuning (Hu et al.; PEFT's LoraConfig): beside each targeted
// projection, x -> B A dropout(x) scaled by alpha / rank, A (rank x in)
// and B (out x rank, zero at the start) trained, every other weight frozen.
// Roles name projections: q, k, v (or qkv, one projection for the three), o
// (attention's output), gate, up, down (a SwiGLU MLP's), fc1, fc2 (another
// MLP's). Every projection's frozen weight is stored as `base_weights`
// says (nf4: QLoRA), and loaded in the compute dtype for each matmul.
struct LoraConfig {
  int rank = 0;
  double alpha = 8;  // PEFT's default
  double dropout = 0;
  std::vector<std::string> targets;
  WeightFormat base_weights = WeightFormat::fp32;
  double scale() const { return alpha / rank; }
};

// A mixture of experts in place of the MLP (Mixtral, Qwen2-MoE, OLMoE): a
// router (d -> experts) sends each token to its `experts_per_token` best
// experts, SwiGLU MLPs of width `expert_hidden`, whose outputs it weighs by
// the router's softmax (over the chosen ones again where normalize_top_k);
// beside them, a shared expert every token goes through (Qwen2-MoE: width
// `shared_hidden`, scaled by a sigmoid gate d -> 1). Block i is one where
// (i + 1) % sparse_step == 0 and i is not in dense_blocks; the others keep
// the dense MLP. The router's load-balancing loss is weighted aux_loss.
struct MoeConfig {
  int experts = 0;
  int experts_per_token = 0;
  int expert_hidden = 0;
  int shared_hidden = 0;  // 0: no shared expert
  bool shared_gate = false;
  int sparse_step = 1;
  std::vector<int> dense_blocks;
  bool normalize_top_k = true;
  double aux_loss = 0.01;
  // Routing forced as a benchmark forces it (Megatron-LM's
  // --moe-router-force-load-balancing): the last expert of a block gets this
  // share of its routings, the others the rest alike (1 / experts:
  // balanced); the router's probabilities still weight them. None: the
  // router decides, as in training.
  std::optional<double> busiest_share;
  // Forced routings are shared out in repeats of this many's shares (0: all
  // at once), so that each expert's share grows in proportion with the
  // tokens: a shape fraction's (shape_fraction.h).
  int64_t routing_unit = 0;
  // To profile a mixture of many alike experts quickly (routing forced, its
  // experts in runs of alike ones: busier_experts_at): only this many experts
  // are built, those that stand for the others (profiled_expert_ids, as
  // experts 0 .. n-1); the router still scores all, and the routings of the
  // others are dropped. The fit makes the model of all of them
  // (model/fit/expert_scaling.h). 0: all.
  int profiled_experts = 0;
  // With profiled_experts: how many experts forced routing gives one routing
  // more than the others but the last (ForcedRouting::more), which splits
  // them into runs (alike_expert_runs).
  int busier_experts = 0;
  int built_experts() const { return profiled_experts > 0 ? profiled_experts : experts; }
  // The id among the mixture's of each expert built, in order.
  std::vector<int> built_expert_ids() const;
  // GPT-OSS's: a bias on the router's logits and on each expert's
  // projections, and the experts' gate and up joined by a clamped SwiGLU,
  // (clamp(up, ±limit) + 1)·c·sigmoid(alpha·c), c = min(gate, limit), in
  // place of silu(gate)·up (limit 0: the plain one).
  bool router_bias = false, expert_bias = false;
  double swiglu_alpha = 1.702, swiglu_limit = 0;
  // DeepSeek-V3's routing: each expert's score a sigmoid of its logit (not
  // a softmax over them); experts chosen by score plus a selection bias (a
  // buffer a rule outside the gradient adjusts; zero here) within the
  // `groups_per_token` best of `groups` groups (a group ranked by its two
  // best scores); the chosen's scores, renormalized where normalize_top_k,
  // times `routed_scale` weigh their outputs.
  bool sigmoid_scores = false;
  bool selection_bias = false;
  int groups = 1, groups_per_token = 1;
  double routed_scale = 1;
};

// Multi-head latent attention (DeepSeek-V2/V3): q projected down to
// `q_rank` (0: projected whole, no latent), normalized and up to every
// head's nope_dim + rope_dim; k and v from one latent of `kv_rank`,
// normalized and projected up to each head's nope_dim key part and its
// value_dim value, beside a rope_dim key part projected once for all heads
// and rotated; the nope parts are not rotated.
struct LatentAttentionConfig {
  int q_rank = 0;
  int kv_rank = 0;
  int nope_dim = 0;
  int rope_dim = 0;
  int value_dim = 0;
};

enum class QkNorm { none, projection, head };

// Multi-token prediction (DeepSeek-V3's, as Megatron-LM trains it): after the
// main LM head, `depth` modules each predict one token further ahead. Module
// k (1 .. depth) looks up the ids k places ahead in the token embedding,
// normalizes them and the stream it is given (the last block's output, then
// module k-1's), projects the two joined (2 d_model -> d_model), runs them
// through one more block (the blocks' kind of the block after the last) and
// a norm, and scores them with the main LM head's weights against the
// targets k places ahead, the last k positions left out of its loss. The
// modules' losses, averaged and weighted by loss_scale, join the main loss.
struct MultiTokenPredictionConfig {
  int depth = 1;
  double loss_scale = 0.1;  // Megatron-LM's --mtp-loss-scaling-factor default
};

struct TransformerConfig {
  int layers = 0;
  int d_model = 0;
  int heads = 0;
  int kv_heads = 0;    // heads of k and v: fewer than `heads` is grouped-query attention
  int head_width = 0;  // each head's dimensions where the config gives them (Qwen3, Gemma), else d_model / heads
  double mlp_ratio = 4.0;
  int mlp_width = 0;                  // the MLP's width where given, else mlp_ratio·d_model
  std::string activation = "gelu";    // gelu | silu | relu | swiglu | geglu (gated: gate, up, down)
  std::string norm = "layernorm";     // layernorm | rmsnorm
  double dropout = 0.0;               // after embeddings and on each residual branch
  double attention_dropout = 0.0;     // on attention's probabilities (default: dropout)
  std::string positions = "learned";  // learned (a table added to the input) | rotary (q and k rotated)
  double rotary_fraction = 1.0;       // of each head's dimensions, rotated
  double rotary_base = 10000;
  RopeScaling rope_scaling;  // of every block's rotation, but windowed blocks with a rotary base of their own
  int max_positions = 0;     // rows of a learned position table (gpt, bert; at least seq_len)
  bool qkv_bias = true, proj_bias = true, mlp_bias = true;
  // One projection makes q, k and v (GPT-2, GPT-NeoX), or three do (BERT,
  // ViT, Llama, OPT): under autocast each of the three saves its own
  // half-type copy of the input.
  bool fused_qkv = true;
  // A SwiGLU MLP's gate and up as one projection of twice the width, its
  // output split in two (Phi-3's gate_up_proj): under autocast one half-type
  // copy of the input saved, not two.
  bool fused_gate_up = false;
  // Attention fused into one layer that keeps no token-by-token scores
  // (FlashAttention, PyTorch's scaled_dot_product_attention: what
  // transformers train with), or materialized as scores, softmax and context
  // that keep the probabilities (the published per-layer counts, e.g.
  // Korthikanti et al.'s, assume these).
  std::string attention = "fused";  // fused | materialized
  // Causal attention within a sliding window: each token sees its last
  // `sliding_window` (itself among them) in the blocks `window_blocks` say
  // (empty: every block; Mistral, and Qwen2/3, Gemma and GPT-OSS in some);
  // 0: no window. Fused attention only.
  int sliding_window = 0;
  std::vector<int> window_blocks;
  bool tied_head = true;           // gpt: the LM head is the token embedding
  bool parallel_residual = false;  // x + attn(ln1 x) + mlp(ln2 x)
  // Each branch's output normalized before it joins the stream (Gemma 2
  // and 3): x + post_attn_norm(attn(ln1 x)), then the MLP's alike.
  bool post_norms = false;
  bool scaled_embedding = false;  // token embeddings times sqrt(d_model) (Gemma)
  double attention_scale = 0;     // the scores' scale; 0: 1 / sqrt(head_dim) (Gemma: query_pre_attn_scalar^-1/2)
  // Logits soft-capped, cap·tanh(x / cap) (Gemma 2): attention's scores
  // after their scale (inside fused attention), and the LM head's; 0: not.
  double attention_softcap = 0, logit_softcap = 0;
  // A learned logit a head that joins each row's softmax with no value, so
  // that a row may attend to nothing (GPT-OSS's sinks). Fused attention only.
  bool attention_sinks = false;
  double window_rotary_base = 0;  // rotary base of the blocks with a sliding window; 0: rotary_base (Gemma 3's local blocks)
  int seq_len = 0;                // gpt, bert; vit: derived (patches + class token)
  int vocab = 0;                  // gpt, bert
  int classes = 0;                // bert, vit
  int token_types = 0;            // bert: rows of a token-type table added to the input (0: none)
  bool pooler = false;            // bert: dense + tanh on the first token before the classifier
  int image_size = 0, patch = 0, channels = 3;  // vit
  std::optional<LoraConfig> lora;               // fine-tuned with LoRA adapters, else trained whole
  std::optional<MoeConfig> moe;                 // mixture-of-experts blocks
  // q and k normalized after their projections: over each projection's
  // whole output (OLMoE), or over each head with one weight of head_dim()
  // (Qwen3, Gemma 3).
  QkNorm qk_norm = QkNorm::none;
  std::optional<LatentAttentionConfig> latent;  // multi-head latent attention in place of q, k and v projections
  std::optional<MultiTokenPredictionConfig> multi_token_prediction;  // gpt: modules that predict further tokens

  int mlp_hidden() const;
  // q's and k's dimensions a head (a latent attention's nope and rope parts).
  int head_dim() const { return latent ? latent->nope_dim + latent->rope_dim : head_width > 0 ? head_width : d_model / heads; }
  // The width of attention's output: every head's value dimensions (d_model
  // unless the config gives a head width or a latent attention's).
  int64_t attention_width() const { return static_cast<int64_t>(heads) * (latent ? latent->value_dim : head_dim()); }
  bool rotary() const { return positions == "rotary"; }
  // A gated MLP (SwiGLU, GeGLU): fc2(act(gate x) * up x).
  bool gated() const { return activation == "swiglu" || activation == "geglu"; }
  // The rotary base of block `i`, and its frequencies' scaling (Gemma 3's
  // local blocks: their own base, unscaled).
  double rotary_base_of(int i) const { return local_rotary(i) ? window_rotary_base : rotary_base; }
  RopeScaling rope_scaling_of(int i) const { return local_rotary(i) ? RopeScaling{} : rope_scaling; }
  bool local_rotary(int i) const { return window_rotary_base > 0 && window_of(i) > 0; }
  bool fused_attention() const { return attention == "fused"; }
  // The leading dimensions of each head that rotary embeddings rotate (a
  // latent attention's rope part).
  int rotary_dims() const;
  // Whether block `i` is a mixture of experts.
  bool is_moe_block(int i) const;
  // The sliding window of block `i`'s attention, 0 for none.
  int window_of(int i) const;
};

// The roles of a block's projections: q, k, v (or qkv; a latent
// attention's latent_roles), o, then gate, up, down (SwiGLU; gate_up, down
// where joined) or fc1, fc2.
std::vector<std::string> projection_roles(const TransformerConfig& t);
// A latent attention's projections before o: q_a, q_b (q where q has no
// latent), kv_a, kv_b.
std::vector<std::string> latent_roles(const LatentAttentionConfig& latent);
// A projection's inputs and outputs by its role.
std::pair<int64_t, int64_t> projection_shape(const TransformerConfig& t, const std::string& role);

struct ResNetConfig {
  std::string block = "bottleneck";  // basic | bottleneck
  std::vector<int> stages;           // blocks per stage
  int width = 64;                    // channels of the stem and first stage
  int image_size = 224, channels = 3, classes = 1000;
};

struct MlpConfig {
  int input = 0;
  std::vector<int> hidden;
  int classes = 0;
  std::string activation = "relu";  // relu | gelu | silu
  double dropout = 0.0;
};

// A user's network papaya did not build: a TorchScript archive
// (executor/torchscript/), the specs of its forward's inputs and how its
// output becomes a loss.
struct TorchScriptConfig {
  std::string archive;              // the file
  std::vector<std::string> inputs;  // model/catalog/input_spec.h, in the forward's order
  std::string loss;                 // output, cross-entropy, mse; "": from the output's shape
  int64_t parameters = 0;           // counted when it was loaded, shared tensors once
};

struct NetworkConfig {
  std::string name;
  std::string description;
  std::string source;  // the file it was read from
  // The papaya config document it was parsed from (an imported HuggingFace
  // config's conversion): what profiles and training states record.
  nlohmann::json document;
  Family family = Family::mlp;
  std::variant<TransformerConfig, ResNetConfig, MlpConfig, TorchScriptConfig> body;
  // Fine-tuned with the layers these patterns match frozen
  // (model/catalog/layer_pattern.h); empty: as the body says.
  std::vector<std::string> freeze;
  // The precision it trains in unless a command is told otherwise (fp32,
  // bf16, amp-bf16, amp-fp16): an imported LLM's is bf16 mixed precision.
  std::string precision = "fp32";

  const TransformerConfig& transformer() const { return std::get<TransformerConfig>(body); }
  const ResNetConfig& resnet() const { return std::get<ResNetConfig>(body); }
  const MlpConfig& mlp() const { return std::get<MlpConfig>(body); }
  const TorchScriptConfig& torchscript() const { return std::get<TorchScriptConfig>(body); }
  // The mixture of experts of a transformer's blocks; nullptr where it has none.
  const MoeConfig* mixture() const;
  // Tokens (or patches) per sample, 1 for networks without a sequence.
  int sequence_length() const;
  // Rows of the learned position table; 0 with rotary positions.
  int position_rows() const;
  // The smallest batch a training-mode forward is run at: 1, or 2 for a
  // TorchScript network, whose batch norms may see a 1x1 map (torchvision's
  // ResNets at 32 pixels) and refuse one value per channel.
  int smallest_batch() const;
};

std::string to_string(Family family);

// Loads a config by name (configs/networks/<name>.json) or by path (anything
// with a '/' or ending in .json). `seq_len`: tokens per sample instead of the
// config's (gpt, bert; a learned position table keeps its rows, and bounds
// it). Throws InputError naming the file, the JSON path (or --seq-len) and
// what was expected.
NetworkConfig load_network_config(const std::string& name_or_path, std::optional<int> seq_len = std::nullopt);

// `config` (a gpt or bert) trained at `seq_len` tokens. Throws InputError
// naming --seq-len for another family or a length past a learned position
// table.
NetworkConfig at_seq_len(const NetworkConfig& config, int seq_len);

// `config` (a transformer) fine-tuned with `lora`. Throws InputError naming
// --lora for another family, and the target where a role names no
// projection of this network.
NetworkConfig with_lora(const NetworkConfig& config, const LoraConfig& lora);

// `config` (a transformer) with its attention "fused" or "materialized"
// (TransformerConfig::attention). Throws InputError for another family.
NetworkConfig with_attention(const NetworkConfig& config, const std::string& attention);
// `config` with the layers `patterns` match frozen (checked against its
// layers by model::check_frozen_layers). Throws InputError for a TorchScript
// network and as parse_network_config for a malformed pattern.
NetworkConfig with_freeze(const NetworkConfig& config, const std::vector<std::string>& patterns);
// Whether `share` can be the busiest expert's: from 1 / experts (below the
// mean is no busiest) to 1 / experts_per_token (above, an expert would take
// a token twice); the range in words for an error.
bool busiest_share_fits(const MoeConfig& moe, double share);
std::string busiest_share_range(const MoeConfig& moe);
// `config`'s mixture of experts routed with the busiest expert's share forced
// (MoeConfig::busiest_share). Throws InputError where it has no mixture or
// the share does not fit.
NetworkConfig with_expert_routing(const NetworkConfig& config, double busiest_share);

// How forced routing (MoeConfig::busiest_share) shares out a batch's
// `routings` (its tokens x experts_per_token): in `repeats` units of `unit`
// routings (MoeConfig::routing_unit where it divides them, else all at
// once), each unit's `busiest` to the last expert and the rest to the
// others, `each` to every one and one more to the first `more` of them.
struct ForcedRouting {
  int64_t unit = 0, repeats = 0, busiest = 0, each = 0, more = 0;
};
ForcedRouting forced_routing(const MoeConfig& moe, int64_t routings);
// How many of `config`'s experts its forced routing gives one routing more
// (ForcedRouting::more) where that is the same at each of `batches`: its
// experts then fall into runs that route alike (alike_expert_runs), so that
// a few of them stand for all (MoeConfig::profiled_experts). None without
// forced routing, or where it differs from batch to batch.
std::optional<int> busier_experts_at(const NetworkConfig& config, const std::vector<int>& batches);
// Experts [first, first + count) of a mixture, routed alike.
struct ExpertRun {
  int first = 0, count = 0;
};
// The runs of `experts` experts under forced routing giving the first
// `busier` one routing more: those, the others but the last, and the last
// (empty runs left out).
std::vector<ExpertRun> alike_expert_runs(int experts, int busier);
// The experts that stand for all of `runs`: of each run of three or more,
// its first two (the first to stand for all but the run's last, the second
// as its last); a shorter run's every expert.
std::vector<int> profiled_expert_ids(const std::vector<ExpertRun>& runs);
// How many experts stand for all `experts` where `busier` get a routing
// more: profiled_expert_ids of their alike_expert_runs, counted.
int standing_experts(int experts, int busier);
// `config` with only the experts that stand for all built, its forced
// routing giving `busier` of them one routing more (MoeConfig::profiled_experts
// and busier_experts); none: every expert built. Throws InputError where it
// has no forced routing, or those are not fewer than all.
NetworkConfig with_profiled_experts(const NetworkConfig& config, std::optional<int> busier);

// `config` (a transformer) with its first `blocks` blocks only: what
// `papaya profile --profile-blocks` measures. Throws InputError naming
// --profile-blocks for another family or a count outside 2..layers.
NetworkConfig with_blocks(const NetworkConfig& config, int blocks);

// The blocks of a transformer numbered by their kind, in the order the
// kinds first appear: blocks of one attention window and either an MLP or
// a mixture of experts are of one kind (Gemma 3's five local blocks, then a
// global one: 0 0 0 0 0 1 0 ...; DeepSeek-V3's three dense blocks, then
// mixtures: 0 0 0 1 1 ...). Blocks of one number compute alike, so a model
// of some of them prices the others as the last profiled of theirs
// (model/fit/block_scaling.h).
std::vector<int> block_kinds(const TransformerConfig& t);

// The fewest first blocks, 2 at least, among which every kind of the
// network's blocks appears and whose last two hold the same layers (both
// MLPs or both mixtures: their difference is what one more block holds):
// what a profile of some blocks measures so that every block is modelled
// from one alike (Gemma 3's: 6; GPT-OSS's, whose windowed and full blocks
// alternate: 2; DeepSeek-V3's: 5).
int blocks_with_every_kind(const TransformerConfig& t);

// Parses and validates a config document, a papaya one or a HuggingFace
// config.json (model/catalog/hf_config.h; named after `label`'s file name); `label`
// names it in errors.
NetworkConfig parse_network_config(const nlohmann::json& doc, const std::string& label);

// Names of the shipped configs, sorted.
std::vector<std::string> shipped_network_names();

}  // namespace papaya::model
