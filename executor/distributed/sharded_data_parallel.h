#pragma once
// ZeRO-2 and ZeRO-3 data parallelism over Collectives (ZeRO-1 is
// DataParallel's): each rank owns a shard of the parameters (shards()),
// holds their gradients and AdamW's state only, and steps them.
//
// Gradients leave in buckets of about `bucket_bytes` as backward makes them
// (the last layers' first), each reduced to the ranks owning its parameters;
// a bucket fills one of two buffers kept all run (one filling, one on the
// wire; a third only where backward fills buckets out of order), and each
// gradient is let go as soon as it is in a bucket (the owned ones' means
// are kept apart, all run, as one process keeps its gradients). The buffers
// are kept, not freed, also because c10d's worker thread may drop the last
// reference to a reduced tensor, where no memory report sees it freed.
//
// ZeRO-3 holds the weights a rank does not own as storage of 0 bytes (the
// tensors keep their shapes, so autograd's graph stays valid), gathers a
// layer's from their owners as its forward begins and lets them go as it
// ends (a layer observer, so recomputed segments gather alike); as its
// backward starts, its own and, ahead of use, the next one's, held until the
// next layer's backward starts: at most two layers' weights at once, where
// the model counts them (model/parallel/data_parallel.h, GatheredWeights).
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "executor/distributed/collectives.h"
#include "executor/distributed/data_parallel.h"
#include "executor/layer.h"
#include "executor/networks/network.h"

namespace papaya::executor {

class ShardedDataParallel : private LayerObserver {
 public:
  // `zero_stage` 2 or 3; throws InputError otherwise. Lets go of the
  // gradients (and, under ZeRO-3 once broadcast_parameters ran, the weights)
  // this rank does not own.
  ShardedDataParallel(Collectives& collectives, Network& network, int zero_stage, int64_t bucket_bytes = int64_t{25} << 20);
  ~ShardedDataParallel() override;  // removes its hooks and gives every weight its storage back
  ShardedDataParallel(const ShardedDataParallel&) = delete;
  ShardedDataParallel& operator=(const ShardedDataParallel&) = delete;

  // This rank's parameters, whose gradients and optimizer state it holds.
  const std::vector<torch::Tensor>& owned() const { return owned_; }
  // Every rank's parameters made rank 0's; under ZeRO-3, then, those this
  // rank does not own let go.
  void broadcast_parameters();
  // Before the step's forward: the gradients left to autograd (each let go
  // once in a bucket) and, under ZeRO-3, the layers' gathering installed on
  // this thread until reduce_gradients.
  void begin_step();
  // After backward: every owned gradient made the mean of the ranks', every
  // other one let go (the buckets backward has not sent, sent now).
  void reduce_gradients();
  // After the optimizer's step (ZeRO-2): every rank's parameters made their
  // owners'. Under ZeRO-3 nothing: the layers gather them as they run.
  void gather_shards();

 private:
  struct Bucket : GradientBucket {
    std::vector<int> owners;
    int arrived = 0;
    // The owned ones' gradients, kept all run (undefined for the others).
    std::vector<torch::Tensor> owned_gradients;
    torch::Tensor flat;  // the sum of its gradients so far, in a buffer; undefined between steps
    int buffer = -1;     // which
    std::vector<Collectives::Pending> pending;
    bool sent = false;
  };
  struct LateGradient {
    Bucket* bucket;
    size_t index;
    torch::Tensor gradient;
  };
  bool mine(const torch::Tensor& parameter) const;
  // Autograd has put a parameter's gradient in its .grad: into the bucket with it.
  void gradient_arrived(Bucket& bucket, size_t index);
  void send(Bucket& bucket);
  // Waits for the bucket's reductions, puts the owned gradients' means in place and frees the buffer.
  void finish(Bucket& bucket);
  // A free buffer for `bucket`: the one on the wire's once its reduction ends, or a new one.
  void take_buffer(Bucket& bucket);

  // LayerObserver: a layer's weights gathered from the start of its forward to its end.
  void forward_begin(const Layer& layer, std::vector<torch::Tensor*>& inputs) override;
  void saved(const Layer&, const Slot&, const torch::Tensor&) override {}
  void forward_end(const Layer& layer, torch::Tensor& output) override;
  void backward_begin(const Layer& layer);
  void acquire(const Layer& layer);
  void release(const Layer& layer);

  Collectives& collectives_;
  Network& network_;
  int zero_stage_;
  std::vector<torch::Tensor> owned_;
  std::unordered_map<const void*, int> owner_;  // parameter -> the rank owning it
  std::vector<Bucket> buckets_;
  Bucket* on_the_wire_ = nullptr;
  std::vector<torch::Tensor> buffers_;  // each as long as the longest bucket
  std::vector<bool> buffer_taken_;
  std::vector<LateGradient> late_;
  // Each parameter's gradient accumulator and the hook put on it.
  std::vector<std::pair<std::shared_ptr<torch::autograd::Node>, uintptr_t>> hooks_;
  // ZeRO-3: each layer's sharded weights (every rank's, in the same order),
  // how many gathers of each are open, and the layers whose backward holds theirs.
  std::unordered_map<const Layer*, std::vector<torch::Tensor>> layer_weights_;
  std::unordered_map<const void*, int> gathered_;
  std::vector<const Layer*> held_for_backward_;
  std::unordered_map<const Layer*, const Layer*> next_in_backward_;  // the nearest earlier layer with sharded weights
  std::unique_ptr<ObserverGuard> observing_;
};

}  // namespace papaya::executor
