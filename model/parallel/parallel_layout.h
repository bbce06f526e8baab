#pragma once
// How a transformer's training is laid out over many GPUs, as Megatron-LM
// and torchtitan lay it out: tensor parallelism t (each block's projections
// split by columns then rows, heads split), sequence parallelism on top of
// it (the residual stream's tokens split t ways where tensor parallelism
// would copy it), pipeline parallelism p (blocks split into stages, v model
// chunks a stage interleaved), context parallelism c (tokens split, k and v
// passed around a ring), expert parallelism e (a mixture of experts' experts
// split) and data parallelism d with a ZeRO stage; t·p·c·d GPUs in all.
#include <string>

namespace papaya::model {

struct ParallelLayout {
  int tensor = 1;
  bool sequence = false;  // with tensor > 1
  int pipeline = 1;
  int virtual_stages = 1;  // model chunks per pipeline rank (interleaved 1F1B)
  int context = 1;
  int expert = 1;  // divides data·context (Megatron's expert groups within data parallelism)
  int data = 1;
  int zero_stage = 0;
  bool offload_optimizer = false;  // the optimizer's state and step on the host (ZeRO-Offload)
  int micro_batch = 1;
  int micro_batches = 1;  // per iteration on each data-parallel rank (gradient accumulation)

  // Data parallelism alone over `gpus`: every other degree 1.
  static ParallelLayout data_parallel(int gpus, int zero_stage) {
    ParallelLayout l;
    l.data = gpus;
    l.zero_stage = zero_stage;
    return l;
  }

  int gpus() const { return tensor * pipeline * context * data; }
  int global_batch() const { return micro_batch * micro_batches * data; }
  // "t2 s p4 v2 c1 d2 z1 mb1x8": every degree, for tables and messages.
  std::string label() const;
};

// What a layout must divide, read off the network.
struct TransformerShape {
  int blocks = 0;
  int heads = 0, kv_heads = 0;
  int experts = 0;               // 0: no mixture of experts
  int tokens = 0;                // a sample's
  bool fused_attention = false;  // one fused layer (FlashAttention), or scores, softmax and context
  int prediction_modules = 0;    // multi-token prediction's (model::MultiTokenPredictionConfig::depth)
  double prediction_loss_scale = 0;
};

// InputError naming the constraint a layout breaks: degrees below 1, heads
// or k/v heads (where there are more k/v heads than t) that t does not
// divide, fewer blocks than p·v, fewer micro-batches than p under 1F1B
// (interleaved: micro-batches not a multiple of p), tokens that 2·c (ring
// attention's halves) or t with sequence parallelism does not divide,
// experts that e does not divide, e not dividing d·c, a ZeRO stage above 0
// with one data-parallel rank (d·c = 1) or outside
// 0-3, and a total other than `gpus` (0: any).
void check_layout(const ParallelLayout& layout, const TransformerShape& shape, int gpus = 0);
// The same, but for the rules that need the network's shape.
void check_layout(const ParallelLayout& layout, int gpus = 0);
// The same, the message after `where` (a file and where in it the layout is).
void check_layout_in(const ParallelLayout& layout, const std::string& where);

}  // namespace papaya::model
