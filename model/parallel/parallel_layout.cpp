#include "model/parallel/parallel_layout.h"

#include "model/error.h"

namespace papaya::model {
namespace {

std::string n(int value) { return std::to_string(value); }

// The rules in one order, the shape's only where there is one: the first broken is the message.
void check(const ParallelLayout& l, const TransformerShape* shape, int gpus) {
  const auto require = [](bool ok, const std::string& why) {
    if (!ok) throw InputError("layout: " + why);
  };
  const TransformerShape& s = shape ? *shape : TransformerShape{};
  const bool known = shape != nullptr;
  for (auto [degree, name] : {std::pair{l.tensor, "tensor parallelism"},
                              {l.pipeline, "pipeline parallelism"},
                              {l.virtual_stages, "virtual pipeline stages"},
                              {l.context, "context parallelism"},
                              {l.expert, "expert parallelism"},
                              {l.data, "data parallelism"},
                              {l.micro_batch, "the micro-batch"},
                              {l.micro_batches, "micro-batches"}}) {
    require(degree >= 1, std::string(name) + " is " + n(degree) + ": at least 1");
  }
  require(l.zero_stage >= 0 && l.zero_stage <= 3, "ZeRO stage " + n(l.zero_stage) + ": a ZeRO stage is 0 to 3");
  require(l.zero_stage == 0 || l.data * l.context > 1,
          "ZeRO stage " + n(l.zero_stage) + " shards across data-parallel ranks: it needs 2 or more (d x c is 1)");
  require(!known || s.heads % l.tensor == 0, n(s.heads) + " heads do not split over tensor parallelism " + n(l.tensor));
  require(!known || (s.kv_heads > 0 && (s.kv_heads <= l.tensor ? l.tensor % s.kv_heads == 0 : s.kv_heads % l.tensor == 0)),
          n(s.kv_heads) + " k/v heads do not split over tensor parallelism " + n(l.tensor) +
              " (nor t over them, each copied to t/k/v-heads ranks)");
  require(!l.sequence || l.tensor > 1, "sequence parallelism needs tensor parallelism above 1");
  require(!known || !l.sequence || s.tokens % l.tensor == 0,
          n(s.tokens) + " tokens do not split over sequence parallelism " + n(l.tensor));
  require(!known || l.pipeline * l.virtual_stages <= s.blocks, n(s.blocks) + " blocks for " + n(l.pipeline) +
                                                                   " pipeline stages x " + n(l.virtual_stages) +
                                                                   " chunks: a chunk needs a block");
  require(l.virtual_stages == 1 || l.pipeline > 1, "virtual pipeline stages need pipeline parallelism above 1");
  require(l.micro_batches >= l.pipeline,
          n(l.micro_batches) + " micro-batches for " + n(l.pipeline) + " pipeline stages: 1F1B needs at least one a stage");
  require(l.virtual_stages == 1 || l.micro_batches % l.pipeline == 0,
          n(l.micro_batches) + " micro-batches: the interleaved schedule needs a multiple of the " + n(l.pipeline) +
              " pipeline stages");
  require(!known || l.context == 1 || s.tokens % (2 * l.context) == 0,
          n(s.tokens) + " tokens do not split into 2 x " + n(l.context) + " halves for context parallelism " + n(l.context));
  require(!known || l.expert == 1 || s.experts > 0, "expert parallelism " + n(l.expert) + " on a network without experts");
  require(!known || l.expert == 1 || s.experts % l.expert == 0,
          n(s.experts) + " experts do not split over expert parallelism " + n(l.expert));
  require((l.data * l.context) % l.expert == 0,
          "expert parallelism " + n(l.expert) + " does not divide data x context parallelism " + n(l.data * l.context));
  require(gpus == 0 || l.gpus() == gpus, "t x p x c x d = " + n(l.gpus()) + " GPUs, not the " + n(gpus) + " asked for");
}

}  // namespace

std::string ParallelLayout::label() const {
  std::string out = "t" + n(tensor) + (sequence ? "s" : "") + " p" + n(pipeline);
  if (virtual_stages > 1) out += " v" + n(virtual_stages);
  if (context > 1) out += " c" + n(context);
  if (expert > 1) out += " e" + n(expert);
  out += " d" + n(data) + " z" + n(zero_stage) + (offload_optimizer ? "+offload" : "");
  return out + " mb" + n(micro_batch) + "x" + n(micro_batches);
}

void check_layout(const ParallelLayout& layout, const TransformerShape& shape, int gpus) { check(layout, &shape, gpus); }

void check_layout(const ParallelLayout& layout, int gpus) { check(layout, nullptr, gpus); }

void check_layout_in(const ParallelLayout& layout, const std::string& where) {
  try {
    check_layout(layout);
  } catch (const InputError& e) {
    throw InputError(where + ": " + e.what());
  }
}

}  // namespace papaya::model
