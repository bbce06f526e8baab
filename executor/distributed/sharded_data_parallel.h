#pragma once
// ZeRO-2 and ZeRO-3 data parallelism over Collectives (ZeRO-1 is
// DataParallel's): each rank owns a shard of the parameters' elements
// (executor/distributed/shards.h), holds the means of their gradients and
// AdamW's state for them only, and steps them.
//
// Gradients leave in buckets of about `bucket_bytes` as backward makes them
// (the last layers' first), each bucket cut where the shards' owner changes
// and each run reduced to its owner (every micro-batch's, where a pipeline
// stage runs several, as DeepSpeed's ZeRO-2 and FSDP reduce-scatter each;
// the owners add them up); a bucket fills one of two buffers kept all run
// (one filling, one on the wire; a third only where backward fills buckets
// out of order), and each gradient is let go as soon as it is in a bucket.
// The buffers are kept, not freed, also because c10d's worker thread may drop
// the last reference to a reduced tensor, where no memory report sees it
// freed.
//
// ZeRO-3 holds the weights as storage of 0 bytes between uses (the tensors
// keep their shapes, so autograd's graph stays valid), each rank its shard's
// values apart; it gathers a layer's weights, each span from its owner, as
// its forward begins and lets them go as it ends (a layer observer, so
// recomputed segments gather alike); as its backward starts, its own and,
// ahead of use, the next one's, each held until its gradients are made (as
// FSDP's post-backward hook reshards) or the next layer's backward starts:
// at most two layers' weights at once, where the model counts them
// (model/parallel/data_parallel.h, GatheredWeights).
#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "executor/distributed/collectives.h"
#include "executor/distributed/gradient_buckets.h"
#include "executor/distributed/shards.h"
#include "executor/layer.h"
#include "executor/networks/network.h"

namespace papaya::executor {

class ShardedDataParallel : private LayerObserver {
 public:
  // Over `parameters` (a network's trained ones, or a pipeline stage's), of
  // which `shard` is this rank's as AdamW steps it: shard_of(parameters,
  // ranks, rank, zero_stage). `zero_stage` 2 or 3; throws InputError
  // otherwise. Lets go of the parameters' gradients.
  ShardedDataParallel(Collectives& collectives, Network& network, const std::vector<torch::Tensor>& parameters,
                      const std::vector<torch::Tensor>& shard, int zero_stage, int64_t bucket_bytes = int64_t{25} << 20);
  ~ShardedDataParallel() override;  // removes its hooks and gives every weight its storage back
  ShardedDataParallel(const ShardedDataParallel&) = delete;
  ShardedDataParallel& operator=(const ShardedDataParallel&) = delete;

  // Every rank's parameters, and its shard, made rank 0's; under ZeRO-3,
  // then, the weights' storage let go.
  void broadcast_parameters();
  // Before the step's forward: the shard's gradients zeroed, the
  // parameters' left to autograd (each let go once in a bucket) and, under
  // ZeRO-3, the layers' gathering installed on this thread until
  // reduce_gradients.
  void begin_step();
  // After a micro-batch's backward, where a step runs several: its
  // gradients' means added to the shard's (the buckets backward has not
  // sent, sent now).
  void reduce_micro_batch();
  // After backward: the shard's gradients the means of the ranks' (the
  // micro-batches' sum); every parameter's own let go.
  void reduce_gradients();
  // After the optimizer's step: every rank's weights that are kept whole
  // made their owners' (all under ZeRO-2; under ZeRO-3 the layers gather
  // the others as they run).
  void gather_shards();
  // Every weight made whole on every rank while `use` runs (rank 0 writing
  // the trained network), then, under ZeRO-3, let go again: a collective,
  // which every rank calls at the same point between steps.
  void with_whole_weights(const std::function<void()>& use);

 private:
  // A span of this rank's in a bucket's buffer, and its gradient's mean.
  struct Owned {
    int64_t offset = 0;
    torch::Tensor gradient;
  };
  struct Bucket : GradientBucket {
    std::vector<BucketRun> runs;  // each reduced to its owner
    std::vector<Owned> owned;
    int arrived = 0;
    torch::Tensor flat;  // the sum of its gradients so far, in a buffer; undefined between reductions
    int buffer = -1;     // which
    std::vector<Collectives::Pending> pending;
    bool sent = false;
  };
  struct LateGradient {
    torch::Tensor parameter, gradient;
  };
  // A parameter's spans, with this rank's shard tensors (undefined for
  // another rank's spans).
  struct Spans {
    std::vector<ShardSpan> spans;
    std::vector<torch::Tensor> mine;
  };
  // Autograd has put a parameter's gradient in its .grad: into the bucket with it.
  void gradient_arrived(Bucket& bucket, size_t index);
  void send(Bucket& bucket);
  // Waits for the bucket's reductions, adds the owned spans' means and frees the buffer.
  void finish(Bucket& bucket);
  // A free buffer for `bucket`: the one on the wire's once its reduction ends, or a new one.
  void take_buffer(Bucket& bucket);
  // Each span of `parameter`'s values made its owner's.
  void broadcast_spans(const torch::Tensor& parameter);

  // LayerObserver: a layer's weights gathered from the start of its forward to its end.
  void forward_begin(const Layer& layer, std::vector<torch::Tensor*>& inputs) override;
  void saved(const Layer&, const Slot&, const torch::Tensor&) override {}
  void forward_end(const Layer& layer, torch::Tensor& output) override;
  void backward_begin(const Layer& layer);
  // A gradient of one of the layer's weights has arrived in its backward.
  void weight_gradient_made(const Layer& layer);
  void acquire(const Layer& layer);
  void release(const Layer& layer);

  Collectives& collectives_;
  std::vector<torch::Tensor> parameters_;
  int zero_stage_;
  bool micro_batches_reduced_ = false;            // this step's, by reduce_micro_batch
  std::unordered_map<const void*, Spans> spans_;  // parameter -> its spans
  std::unordered_set<const void*> let_go_;        // ZeRO-3: the parameters whose storage goes between uses
  std::vector<torch::Tensor> shard_gradients_;
  std::vector<Bucket> buckets_;
  Bucket* on_the_wire_ = nullptr;
  std::vector<torch::Tensor> buffers_;  // each as long as the longest bucket
  std::vector<bool> buffer_taken_;
  std::vector<LateGradient> late_;
  // Each parameter's gradient accumulator and the hook put on it.
  std::vector<std::pair<std::shared_ptr<torch::autograd::Node>, uintptr_t>> hooks_;
  // ZeRO-3: each layer's weights let go between uses (every rank's, in the
  // same order), how many gathers of each are open, and the layers whose
  // backward holds theirs.
  std::unordered_map<const Layer*, std::vector<torch::Tensor>> layer_weights_;
  std::unordered_map<const void*, int> gathered_;
  std::vector<const Layer*> held_for_backward_;
  std::unordered_map<const void*, std::vector<const Layer*>> layers_of_;  // a weight's layers
  std::unordered_map<const Layer*, int> waiting_;                    // weights' gradients a layer's backward has still to make
  std::unordered_map<const Layer*, const Layer*> next_in_backward_;  // the nearest earlier layer with sharded weights
  std::unique_ptr<ObserverGuard> observing_;
};

}  // namespace papaya::executor
