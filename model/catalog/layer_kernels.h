#pragma once
// The kernels a layer runs on a GPU, read from what a profile says of it
// (its kind, the shapes of the tensors it saves, its analytic FLOPs and bytes
// moved), and their time there by the kernel model (kernel_model.h):
//   linear, lm_head  one product (rows x out x in); backward the input's
//                    gradient (rows x in x out) and, where it trains or
//                    shares trained weights, the weight's (out x in x rows);
//                    the head's log-softmax a pass over the logits each way;
//   conv2d           the same as implicit products (output pixels x output
//                    channels x input channels·kernel area);
//   attention_scores, attention_context
//                    one product a head, batched; as papaya's executor runs
//                    them, the scores' scale, mask and grouping as passes;
//                    as Megatron-LM does, none (the scale is the product's,
//                    the mask its fused softmax's), but shared k/v heads
//                    repeated to every query head;
//   fused_attention  FlashAttention's tiles (kernel_model.h);
//   the rest         memory-bound passes: each kind's eager kernels, as
//                    papaya's executor runs them, over its analytic bytes;
//                    an embedding's backward writes its whole table's
//                    gradient (zeroed, the rows summed, accumulated).
// Under an FP8 recipe, a linear layer it converts (model/fp8_recipe.h) runs
// its products in FP8 beside the casts of their operands: an amax reduction
// and a cast each, memory passes over what the recipe casts.
// Where a product's shape cannot be read (its input is not saved, the
// numbers disagree), its FLOPs are priced at the products' ceiling without
// waves; a TorchScript module, whose FLOPs papaya does not know, by its
// bytes alone.
#include <optional>
#include <vector>

#include "model/catalog/kernel_model.h"
#include "model/fp8_recipe.h"
#include "model/layer_description.h"
#include "model/parallel/engines.h"

namespace papaya::model {

// Which of a product's dimensions the batch multiplies.
enum class BatchDimension { rows, depth, count };

struct ProductWork {
  BatchDimension grows = BatchDimension::rows;
  double count = 1;            // products (heads), a sample's where they grow with it
  double m = 0, n = 0, k = 0;  // a sample's along the growing dimension
  bool fp8 = false;            // its operands FP8 (an FP8 recipe's)
};

struct DirectionWork {
  bool backward = false;
  std::vector<ProductWork> products;
  double unshaped_flops_per_sample = 0;   // products whose shape is unknown
  double attention_flops_per_sample = 0;  // fused attention
  double attention_heads = 0, attention_query_tokens = 0;
  double pass_bytes_per_sample = 0;  // memory-bound passes, in all
  double pass_bytes_fixed = 0;       // ... and what they move whatever the batch
  int pass_kernels = 0;
  int runs = 1;  // times all of it runs in turn (a layer standing for alike experts)
};

struct LayerKernels {
  DirectionWork forward, backward;
};

// What `layer` runs, trained under `recipe` by `engine`: where it stands for
// alike layers (LayerDescription::repeats), one's kernels that many times.
LayerKernels layer_kernels(const LayerDescription& layer, Fp8Recipe recipe = Fp8Recipe::none, Engine engine = Engine::papaya);

// Seconds of one direction's kernels at a batch on a GPU: FP8 products on
// `fp8`'s path (where given), the others on `path`.
double kernel_seconds(const DirectionWork& work, double batch, const KernelModel& gpu, const MatmulPath& path, double bandwidth,
                      const std::optional<MatmulPath>& fp8 = std::nullopt);

}  // namespace papaya::model
