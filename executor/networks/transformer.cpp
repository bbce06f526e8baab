// GPT (causal decoder, pre-norm, LM head tied to the token embedding or its
// own), BERT (encoder, post-norm, classifier on the first token) and ViT
// (patch embedding, class token, pre-norm, classifier on the class token).
// Positions are learned or rotary; k and v may have fewer heads than q.
#include "executor/layers/attention.h"
#include "executor/layers/conv.h"
#include "executor/layers/dense.h"
#include "executor/layers/elementwise.h"
#include "executor/layers/loss.h"
#include "executor/layers/norm.h"
#include "executor/layers/rotary.h"
#include "executor/networks/attention_core.h"
#include "executor/networks/feed_forward.h"
#include "executor/networks/latent_attention.h"
#include "executor/networks/lora.h"
#include "executor/networks/moe.h"
#include "executor/networks/tensor_group.h"
#include "executor/networks/zoo.h"
#include "model/catalog/transformer_shape.h"
#include "model/error.h"
#include "model/parallel/parallel_layout.h"

namespace papaya::executor {
namespace {

using model::Family;
using model::TransformerConfig;

// Layers are registered in the order forward runs them: the profiler and the
// model rely on the order of Network::layers().
std::shared_ptr<Dropout> maybe_dropout(torch::nn::Module& parent, const std::string& name, double p) {
  return p > 0 ? parent.register_module(name, std::make_shared<Dropout>(p)) : nullptr;
}

torch::Tensor drop_or_pass(const std::shared_ptr<Dropout>& dropout, torch::Tensor x) {
  return dropout ? dropout->forward(std::move(x)) : x;
}

class Attention : public torch::nn::Module {
 public:
  // `window`: causal attention within a sliding window of that many keys (0: none).
  Attention(const TransformerConfig& c, bool causal, int64_t window, double rotary_base, const model::RopeScaling& scaling,
            const std::shared_ptr<SequenceTables>& tables)
      : heads_(c.heads), kv_heads_(c.kv_heads), head_dim_(c.head_dim()), per_head_norm_(c.qk_norm == model::QkNorm::head) {
    if (c.fused_qkv) {
      qkv = Projection(*this, "qkv", c.d_model, (c.heads + 2 * c.kv_heads) * c.head_dim(), c.qkv_bias, c, "qkv");
    } else {
      q_proj = Projection(*this, "q", c.d_model, c.heads * c.head_dim(), c.qkv_bias, c, "q");
      k_proj = Projection(*this, "k", c.d_model, c.kv_heads * c.head_dim(), c.qkv_bias, c, "k");
      v_proj = Projection(*this, "v", c.d_model, c.kv_heads * c.head_dim(), c.qkv_bias, c, "v");
    }
    if (c.qk_norm == model::QkNorm::projection) {  // OLMoE's: over each projection's whole output
      q_norm = register_module("q_norm", std::make_shared<Norm>(c.norm, c.attention_width()));
      k_norm = register_module("k_norm", std::make_shared<Norm>(c.norm, c.kv_heads * c.head_dim()));
    } else if (c.qk_norm == model::QkNorm::head) {  // Qwen3's: over each head, one weight for all
      q_norm = register_module("q_norm", std::make_shared<Norm>(c.norm, c.head_dim()));
      k_norm = register_module("k_norm", std::make_shared<Norm>(c.norm, c.head_dim()));
    }
    if (c.rotary()) {
      rope_q = register_module("rope_q", std::make_shared<Rotary>(c.rotary_dims(), rotary_base, tables, scaling));
      rope_k = register_module("rope_k", std::make_shared<Rotary>(c.rotary_dims(), rotary_base, tables, scaling));
    }
    core = attention_core_of(*this, c, causal, window, tables);
    proj = Projection(*this, "proj", c.attention_width(), c.d_model, c.proj_bias, c, "o");
    proj_drop = maybe_dropout(*this, "proj_drop", c.dropout);
  }

  torch::Tensor forward(const torch::Tensor& input) {
    // With the tokens split, the projections gather them (Linear::gathers_tokens).
    const bool gathered = group_ && group_->splits_sequence();
    const torch::Tensor x = group_ && !gathered ? group_->enter(input) : input;
    const int64_t b = x.size(0), s = x.size(1) * (gathered ? group_->size() : 1);
    // (b, s, count head_dim) -> contiguous (b, count, s, head_dim): q with
    // `heads` heads, k and v with `kv_heads`.
    const auto heads_of = [&](const torch::Tensor& projected, int64_t first, int64_t count) {
      return projected.narrow(-1, first * head_dim_, count * head_dim_)
          .view({b, s, count, head_dim_})
          .transpose(1, 2)
          .contiguous();
    };
    torch::Tensor q, k, v;
    if (qkv) {
      const torch::Tensor qkv_out = qkv.forward(x);
      q = heads_of(qkv_out, 0, heads_);
      k = heads_of(qkv_out, heads_, kv_heads_);
      v = heads_of(qkv_out, heads_ + kv_heads_, kv_heads_);
    } else {
      // In the layers' order: the projections, then the norms.
      torch::Tensor q_out = q_proj.forward(x), k_out = k_proj.forward(x);
      v = heads_of(v_proj.forward(x), 0, kv_heads_);
      if (q_norm) {
        // Per head: over the last of (b, s, heads, head_dim), back to (b, s, heads head_dim).
        const auto normed = [&](Norm& norm, const torch::Tensor& projected) {
          if (!per_head_norm_) return norm.forward(projected);
          return norm.forward(projected.view({projected.size(0), projected.size(1), -1, head_dim_})).flatten(2);
        };
        q_out = normed(*q_norm, q_out);
        k_out = normed(*k_norm, k_out);
      }
      q = heads_of(q_out, 0, heads_);
      k = heads_of(k_out, 0, kv_heads_);
    }
    if (rope_q) {
      q = rope_q->forward(q);
      k = rope_k->forward(k);
    }
    torch::Tensor h = core.run(std::move(q), std::move(k), std::move(v));
    h = h.transpose(1, 2).reshape({b, s, heads_ * head_dim_});
    h = proj.forward(h);
    if (group_) h = group_->sum(h);
    return drop_or_pass(proj_drop, std::move(h));
  }

  // Keeps `group`'s rank's share of the heads and k/v heads: q, k and v
  // column-parallel, the output projection row-parallel, its output summed
  // over the group.
  void split(const std::shared_ptr<TensorGroup>& group) {
    const int t = group->size(), r = group->rank();
    const int64_t heads = heads_ / t, kv_heads = kv_heads_ / t;
    // Rows [first, first + count) heads of `at`'s output, for each (first, count).
    const auto keep_heads = [&](const Projection& at, std::vector<std::pair<int64_t, int64_t>> runs) {
      for (torch::Tensor* p : {&at.base->weight, &at.base->bias}) {
        if (!p->defined()) continue;
        std::vector<torch::Tensor> parts;
        for (const auto& [first, count] : runs) parts.push_back(p->narrow(0, first * head_dim_, count * head_dim_));
        p->set_data(torch::cat(parts));
      }
    };
    const torch::NoGradGuard no_grad;
    if (qkv) {
      keep_heads(qkv, {{r * heads, heads}, {heads_ + r * kv_heads, kv_heads}, {heads_ + kv_heads_ + r * kv_heads, kv_heads}});
    } else {
      keep_heads(q_proj, {{r * heads, heads}});
      keep_heads(k_proj, {{r * kv_heads, kv_heads}});
      keep_heads(v_proj, {{r * kv_heads, kv_heads}});
    }
    proj.base->weight.set_data(proj.base->weight.narrow(1, r * heads * head_dim_, heads * head_dim_).contiguous());
    if (group->splits_sequence()) {
      for (const Projection* column : {&qkv, &q_proj, &k_proj, &v_proj}) {
        if (*column) column->base->gathers_tokens = group;
      }
    }
    heads_ = heads;
    kv_heads_ = kv_heads;
    group_ = group;
  }

  Projection qkv, q_proj, k_proj, v_proj, proj;  // qkv, or q, k and v
  std::shared_ptr<Norm> q_norm, k_norm;          // OLMoE's or Qwen3's, or none
  std::shared_ptr<Rotary> rope_q, rope_k;
  AttentionCore core;
  std::shared_ptr<Dropout> proj_drop;

 private:
  int64_t heads_, kv_heads_, head_dim_;
  bool per_head_norm_;
  std::shared_ptr<TensorGroup> group_;
};

// The experts of a mixture block, or its MLP.
struct BlockMlp {
  const TransformerConfig& c;
  int mixture_blocks;      // 0: no block is one
  const Network& network;  // its loss scale, read in backward
};

class Block : public Segment {
 public:
  // Block `index` of the network: its window and rotation are its own.
  Block(const TransformerConfig& c, int index, bool causal, bool pre_norm, const std::shared_ptr<SequenceTables>& tables,
        const BlockMlp* mixture)
      : pre_norm_(pre_norm), parallel_(c.parallel_residual) {
    const auto add_mlp = [&] {
      if (mixture) {
        moe = register_module("moe", std::make_shared<MixtureOfExperts>(c, mixture->mixture_blocks, mixture->network));
      } else {
        mlp = register_module("mlp", std::make_shared<FeedForward>(c, c.mlp_hidden(), c.mlp_bias, c.activation, c.dropout));
      }
    };
    if (pre_norm) {
      ln1 = register_module("ln1", std::make_shared<Norm>(c.norm, c.d_model));
      if (c.latent) {
        latent_attn = register_module("attn", std::make_shared<LatentAttention>(c, c.window_of(index), c.rotary_base_of(index),
                                                                                c.rope_scaling_of(index), tables));
      } else {
        attn = register_module("attn", std::make_shared<Attention>(c, causal, c.window_of(index), c.rotary_base_of(index),
                                                                   c.rope_scaling_of(index), tables));
      }
      if (c.post_norms) post_attn_norm = register_module("post_attn_norm", std::make_shared<Norm>(c.norm, c.d_model));
      ln2 = register_module("ln2", std::make_shared<Norm>(c.norm, c.d_model));
      add_mlp();
      if (c.post_norms) post_mlp_norm = register_module("post_mlp_norm", std::make_shared<Norm>(c.norm, c.d_model));
    } else {
      attn = register_module("attn", std::make_shared<Attention>(c, causal, c.window_of(index), c.rotary_base_of(index),
                                                                 c.rope_scaling_of(index), tables));
      ln1 = register_module("ln1", std::make_shared<Norm>(c.norm, c.d_model));
      add_mlp();
      ln2 = register_module("ln2", std::make_shared<Norm>(c.norm, c.d_model));
    }
  }

  std::shared_ptr<Norm> ln1, ln2;
  std::shared_ptr<Norm> post_attn_norm, post_mlp_norm;  // Gemma's, or none
  std::shared_ptr<Attention> attn;                      // or
  std::shared_ptr<LatentAttention> latent_attn;
  std::shared_ptr<FeedForward> mlp;  // or
  std::shared_ptr<MixtureOfExperts> moe;

 protected:
  torch::Tensor forward(torch::Tensor x) override {
    const auto mlp_of = [&](const torch::Tensor& h) { return moe ? moe->forward(h) : mlp->forward(h); };
    const auto attention_of = [&](const torch::Tensor& h) { return latent_attn ? latent_attn->forward(h) : attn->forward(h); };
    if (parallel_) {  // GPT-NeoX: both branches read the block's input
      torch::Tensor branches = attention_of(ln1->forward(x));
      branches = branches + mlp_of(ln2->forward(x));
      return x + branches;
    }
    if (pre_norm_) {
      const auto normed = [](const std::shared_ptr<Norm>& norm, torch::Tensor h) { return norm ? norm->forward(h) : h; };
      x = x + normed(post_attn_norm, attention_of(ln1->forward(x)));
      return x + normed(post_mlp_norm, mlp_of(ln2->forward(x)));
    }
    x = ln1->forward(x + attn->forward(x));
    return ln2->forward(x + mlp_of(x));
  }

 private:
  bool pre_norm_, parallel_;
};

// One multi-token prediction module (model::MultiTokenPredictionConfig),
// `k` tokens ahead: its embedding and head compute with the main ones'
// weights, its block is the kind of the block after the last.
class PredictionModule : public torch::nn::Module {
 public:
  PredictionModule(const TransformerConfig& c, int64_t k, const Embedding& tok_emb, const LMHead& lm_head,
                   const std::shared_ptr<SequenceTables>& tables, const BlockMlp* mixture) {
    emb = register_module("emb", std::make_shared<Embedding>(tok_emb.weight, tok_emb.scale, k));
    enorm = register_module("enorm", std::make_shared<Norm>(c.norm, c.d_model));
    hnorm = register_module("hnorm", std::make_shared<Norm>(c.norm, c.d_model));
    proj = Projection(*this, "proj", 2 * static_cast<int64_t>(c.d_model), c.d_model, false, c, "mtp_proj");
    block = register_module("block", std::make_shared<Block>(c, c.layers, true, true, tables, mixture));
    norm = register_module("norm", std::make_shared<Norm>(c.norm, c.d_model));
    head = register_module("head", std::make_shared<LMHead>(lm_head.weight));
    head->softcap = lm_head.softcap;
    head->lookahead = k;
  }

  // Its loss, and the stream it hands the next module, from the stream `h`
  // it is given (the last block's output, or the module before's).
  std::pair<torch::Tensor, torch::Tensor> forward(const torch::Tensor& h, const Batch& batch) {
    const torch::Tensor ahead = enorm->forward(emb->forward(batch.input));
    torch::Tensor x = proj.forward(torch::cat({hnorm->forward(h), ahead}, -1));
    x = block->run(std::move(x));
    torch::Tensor loss = head->forward(norm->forward(x), batch.target);
    return {std::move(loss), std::move(x)};
  }

  std::shared_ptr<Embedding> emb;
  std::shared_ptr<Norm> enorm, hnorm, norm;
  Projection proj;
  std::shared_ptr<Block> block;
  std::shared_ptr<LMHead> head;
};

class Transformer : public Network {
 public:
  explicit Transformer(const model::NetworkConfig& config) : Network(config) {
    const auto& c = config.transformer();
    const Family family = config.family;
    if (family == Family::vit) {
      patch_emb = register_module("patch_emb", std::make_shared<Conv2d>(c.channels, c.d_model, c.patch, c.patch, 0, true));
      cls_token = register_module("cls_token", std::make_shared<ClassToken>(c.d_model));
    } else {
      tok_emb = register_module(
          "tok_emb",
          std::make_shared<Embedding>(c.vocab, c.d_model, c.scaled_embedding ? std::sqrt(static_cast<double>(c.d_model)) : 1.0));
    }
    if (c.token_types > 0) type_emb = register_module("type_emb", std::make_shared<TokenTypeEmbedding>(c.token_types, c.d_model));
    if (config.position_rows() > 0) {
      pos_emb = register_module("pos_emb", std::make_shared<PositionEmbedding>(config.position_rows(), c.d_model));
    }
    if (family == Family::bert) emb_norm = register_module("emb_norm", std::make_shared<Norm>(c.norm, c.d_model));
    emb_drop = maybe_dropout(*this, "emb_drop", c.dropout);
    blocks = register_module("blocks", torch::nn::ModuleList());
    const auto tables = std::make_shared<SequenceTables>();
    int mixture_blocks = 0;
    for (int i = 0; i < c.layers; ++i) mixture_blocks += c.is_moe_block(i) ? 1 : 0;
    const BlockMlp mixture{c, mixture_blocks, *this};
    for (int i = 0; i < c.layers; ++i) {
      blocks->push_back(std::make_shared<Block>(c, i, family == Family::gpt, family != Family::bert, tables,
                                                c.is_moe_block(i) ? &mixture : nullptr));
    }
    if (family != Family::bert) ln_f = register_module("ln_f", std::make_shared<Norm>(c.norm, c.d_model));
    if (family == Family::gpt) {
      lm_head = register_module(
          "lm_head", c.tied_head ? std::make_shared<LMHead>(tok_emb->weight) : std::make_shared<LMHead>(c.vocab, c.d_model));
      lm_head->softcap = c.logit_softcap;
      if (c.multi_token_prediction) {
        mtp = register_module("mtp", torch::nn::ModuleList());
        for (int k = 1; k <= c.multi_token_prediction->depth; ++k) {
          mtp->push_back(std::make_shared<PredictionModule>(c, k, *tok_emb, *lm_head, tables,
                                                            c.is_moe_block(c.layers) ? &mixture : nullptr));
        }
      }
    } else {
      if (c.pooler) {  // HuggingFace's BertPooler, and the dropout before its classifier
        pooler = register_module("pooler", std::make_shared<Linear>(c.d_model, c.d_model));
        pooler_act = register_module("pooler_act", std::make_shared<Activation>("tanh"));
        head_drop = maybe_dropout(*this, "head_drop", c.dropout);
      }
      head = register_module("head", std::make_shared<Linear>(c.d_model, c.classes));
      loss_fn = register_module("loss", std::make_shared<CrossEntropy>());
    }
    index_paths();
  }

  torch::Tensor loss(const Batch& batch) override {
    torch::Tensor x = before_blocks(batch);
    for (int i = 0; i < block_count(); ++i) x = run_block(i, std::move(x));
    return after_blocks(std::move(x), batch);
  }

  int block_count() const override { return static_cast<int>(blocks->size()); }

  void split_tensors(const std::shared_ptr<TensorGroup>& group) override {
    check_tensor_split(config(), group->size(), group->splits_sequence());
    tok_emb->split(group);
    std::vector<torch::Tensor> whole = ln_f->parameters();
    for (const auto& module : *blocks) {
      auto& block = *module->as<Block>();
      block.attn->split(group);
      block.mlp->split(group);
      for (const auto& norm : {block.ln1, block.ln2}) {
        for (const auto& p : norm->parameters()) whole.push_back(p);
      }
    }
    lm_head->split(group);
    set_replicated_weights(std::move(whole));
  }

  torch::Tensor before_blocks(const Batch& batch) override {
    torch::Tensor x;
    if (patch_emb) {
      x = patch_emb->forward(batch.input.to(compute_dtype())).flatten(2).transpose(1, 2);
      x = cls_token->forward(x);
    } else {
      x = tok_emb->forward(batch.input);
    }
    if (type_emb) x = type_emb->forward(x);
    if (pos_emb) x = pos_emb->forward(x);
    if (emb_norm) x = emb_norm->forward(x);
    return drop_or_pass(emb_drop, x);
  }

  torch::Tensor run_block(int block, torch::Tensor x) override {
    return (*blocks)[static_cast<size_t>(block)]->as<Segment>()->run(std::move(x));
  }

  torch::Tensor after_blocks(torch::Tensor x, const Batch& batch) override {
    torch::Tensor stream = mtp ? x : torch::Tensor();  // the prediction modules' first input, held only for them
    if (ln_f) x = ln_f->forward(x);
    if (lm_head) return with_predictions(lm_head->forward(x, batch.target), std::move(stream), batch);
    x = x.select(1, 0);
    if (pooler) x = drop_or_pass(head_drop, pooler_act->forward(pooler->forward(x)));
    return loss_fn->forward(head->forward(x), batch.target);
  }

  // The main loss and, weighted beside it, the prediction modules' losses
  // averaged, each module given the stream the one before handed on.
  torch::Tensor with_predictions(torch::Tensor loss, torch::Tensor stream, const Batch& batch) {
    if (!mtp) return loss;
    const auto& m = *config().transformer().multi_token_prediction;
    torch::Tensor predicted;
    for (const auto& module : *mtp) {
      auto [module_loss, next] = module->as<PredictionModule>()->forward(stream, batch);
      predicted = predicted.defined() ? predicted + module_loss : module_loss;
      stream = std::move(next);
    }
    return loss + predicted * (m.loss_scale / m.depth);
  }

  std::shared_ptr<Conv2d> patch_emb;
  std::shared_ptr<ClassToken> cls_token;
  std::shared_ptr<Embedding> tok_emb;
  std::shared_ptr<TokenTypeEmbedding> type_emb;
  std::shared_ptr<PositionEmbedding> pos_emb;
  std::shared_ptr<Norm> emb_norm, ln_f;
  std::shared_ptr<Dropout> emb_drop;
  torch::nn::ModuleList blocks{nullptr};
  std::shared_ptr<LMHead> lm_head;
  torch::nn::ModuleList mtp{nullptr};  // the multi-token prediction modules, or none
  std::shared_ptr<Linear> head, pooler;
  std::shared_ptr<Activation> pooler_act;
  std::shared_ptr<Dropout> head_drop;
  std::shared_ptr<CrossEntropy> loss_fn;
};

}  // namespace

void check_tensor_split(const model::NetworkConfig& config, int ranks, bool sequence_parallel) {
  const auto refuse = [&](const std::string& why) {
    throw InputError(config.name + ": tensor parallelism over " + std::to_string(ranks) + " ranks: " + why);
  };
  const auto* c = std::get_if<TransformerConfig>(&config.body);
  if (!c || config.family != Family::gpt) refuse("built for decoder LMs (gpt) of the zoo only");
  if (c->lora) refuse("of LoRA adapters not built");
  if (c->qk_norm != model::QkNorm::none) refuse("of q and k norms not built");
  if (c->fused_gate_up) refuse("of a joined gate and up projection not built");
  if (c->post_norms) refuse("of the branches' output norms not built");
  if (c->logit_softcap > 0) refuse("of a soft cap on the LM head's logits not built");
  if (c->attention_sinks) refuse("of attention sinks not built");
  if (c->latent) refuse("of latent attention not built");
  if (c->multi_token_prediction) refuse("of multi-token prediction not built");
  if (c->proj_bias || c->mlp_bias) refuse("a row-parallel projection's bias not built (it is added once, after the sum)");
  for (int i = 0; i < c->layers; ++i) {
    if (c->is_moe_block(i)) refuse("of a mixture of experts not built");
  }
  // What any engine's split needs (heads, k/v heads, tokens), as the planner checks it.
  model::ParallelLayout layout;
  layout.tensor = ranks;
  layout.sequence = sequence_parallel;
  model::check_layout(layout, model::transformer_shape(config));
  if (c->kv_heads % ranks != 0) refuse(std::to_string(c->kv_heads) + " k/v heads each copied to several ranks not built");
  if (c->mlp_hidden() % ranks != 0) refuse("an MLP width of " + std::to_string(c->mlp_hidden()) + " does not split evenly");
  if (c->vocab % ranks != 0) refuse("a vocabulary of " + std::to_string(c->vocab) + " does not split evenly");
  if (!sequence_parallel) return;
  const auto with_sp = [&](const std::string& why) { refuse("with sequence parallelism, " + why); };
  // Each rank would draw the same masks for its tokens as the others for theirs.
  if (c->dropout > 0) with_sp("dropout not built");
  if (config.position_rows() > 0) with_sp("a learned position table not built");
}

std::shared_ptr<Network> build_transformer(const model::NetworkConfig& config) { return std::make_shared<Transformer>(config); }

}  // namespace papaya::executor
