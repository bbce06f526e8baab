#pragma once
// A transformer trained over many GPUs (model/parallel/parallel_layout.h), priced per
// GPU from the per-layer model of one process: each pipeline stage is the
// model of one rank of its tensor/context/expert group holding the stage's
// blocks (tensor_split.h, pipeline_stages.h), evaluated as one process at
// the micro-batch under a plan of memory optimizations (PlanSpace), on the
// target GPU, as one of the d·c ranks that reduce its gradients (data and
// context parallelism) with their ZeRO stage (the
// gradient exchange, overlapped with backward, and ZeRO's sharding as for
// data parallelism alone: model/parallel/data_parallel.h).
//
// Memory per GPU of stage s: the one-micro-batch peak plus, for each more
// micro-batch it holds in flight, what a micro-batch holds from its forward
// to its backward (the part of the plan's timeline at the start of the
// stage's backward, less at the start of its forward, that grows with the
// batch: not the weights' half-precision copies, held once). With the
// optimizer offloaded, its state lives on the host.
//
// Time per iteration: the slowest stage's micro-batch (forward, backward,
// recompute and codecs as the plan has them, with its tensor-parallel
// collectives on the tensor group's link — two all-reduces of the stream
// per row-parallel projection, or their all-gather/reduce-scatter halves
// under sequence parallelism, once more for a recomputed one — its sends to
// the next stage, ring attention's k/v beyond the attention's compute, and
// experts' all-to-alls) times micro-batches plus the bubble ((p-1)/v of
// them), then the exchange's exposed part and the optimizer step, and with
// offload the gradients and weights crossing the host link.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "model/catalog/target.h"
#include "model/layer_model.h"
#include "model/parallel/engines.h"
#include "model/parallel/link.h"
#include "model/parallel/parallel_layout.h"
#include "model/parallel/pipeline_stages.h"
#include "model/plan_space/plan_space.h"

namespace papaya::model {

// The links a layout's groups exchange over: within a node, across nodes.
struct ClusterLinks {
  int gpus_per_node = 8;
  std::string intra_name, inter_name;
  LinkFit intra, inter;
};

struct StageEstimate {
  StageSpan span;
  double peak_bytes = 0;           // per GPU
  std::string peak_at;             // where in the step ("backward blocks.3.mlp.fc2")
  double static_bytes = 0;         // weights, gradients and optimizer state on the GPU (after ZeRO)
  double activation_bytes = 0;     // one micro-batch's, from its forward to its backward
  double weight_copies_bytes = 0;  // its layers' half-precision weight copies, held from forward to backward (keep)
  double in_flight = 1;            // micro-batches held at once
  double micro_batch_seconds = 0;  // one micro-batch, its communication included
  double tensor_comm_seconds = 0, pipeline_comm_seconds = 0, context_comm_seconds = 0, expert_comm_seconds = 0;
  double data_comm_seconds = 0;  // the gradient exchange's exposed part, once an iteration
  double optimizer_seconds = 0;
};

struct LayoutEstimate {
  ParallelLayout layout;
  std::string plan;
  bool overlap_grad_reduce = true;  // as priced (LayoutRequest's)
  std::vector<StageEstimate> stages;
  int peak_stage = 0;  // the pipeline rank with the largest peak
  double peak_bytes = 0;
  double iteration_seconds = 0;
  double bubble_seconds = 0;
  double exposed_comm_seconds = 0;  // communication on the critical path, in all
  double offload_seconds = 0;
  double tokens_per_s = 0;
  double model_flops_utilization = 0;  // 0 where the target's peak is unknown (a CPU)
};

struct LayoutRequest {
  std::string hardware;  // a catalog entry; "": the profiled machine
  ClusterLinks links;
  std::optional<double> compute_efficiency;  // catalog_target's
  // The engine that runs the layouts: how it holds the state, its kernels.
  Engine engine = Engine::papaya;
  // Data-parallel gradients reduced in buckets behind the rest of backward
  // (PyTorch DDP, FSDP2, Megatron-LM's --overlap-grad-reduce); false: all
  // of them once backward is done (Megatron-LM without it).
  bool overlap_grad_reduce = true;
  // A mixture's alike experts priced as few layers (alike_experts.h); false:
  // each on its own, the same peaks and times more slowly (for checks).
  bool alike_experts_once = true;
  // The pipeline stages a pricer's worker keeps, each with its plan spaces
  // (megabytes where a stage has thousands of layers); past it the less
  // recently used half is let go. A search prices a stage's layouts one after another, so
  // it seldom builds one again; kept all, DeepSeek-V3's 1,176 stages of 128
  // GPUs took 10 GB, and the first touch of that memory a quarter of the time.
  size_t stages_kept = 64;
};

struct GroupLinks;  // the links of a layout's groups (layout_pricer.cpp)
struct StateBytes;  // model/parallel/data_parallel.h

// Prices layouts of one network on one request, keeping what layouts share
// (the split models of each tensor/context/expert group, each pipeline
// stage's model and target), so that a search prices thousands quickly.
// Each worker (a number from 0) keeps its own stages, and all share the
// split models: calls of different workers may run on different threads at
// once, calls of one worker one at a time.
class LayoutPricer {
 public:
  // Throws InputError where the model is not a transformer's
  // (transformer_shape) or the hardware is not known.
  LayoutPricer(const LayerModel& whole, LayoutRequest request);
  ~LayoutPricer();
  const TransformerShape& shape() const { return shape_; }
  const LayoutRequest& request() const { return request_; }
  // Whether the target has a host link to offload the optimizer over.
  bool can_offload() const { return host_link_; }
  // Throws InputError (check_layout's, a plan that is not known, or a
  // target without a host link under offload).
  LayoutEstimate estimate(const ParallelLayout& layout, const std::string& plan, int worker = 0) const;
  // The peak of each stage's weights, gradients and optimizer state alone:
  // a floor of estimate()'s peak, for pruning.
  double static_floor(const ParallelLayout& layout, int worker = 0) const;
  // The least iteration any plan can take on the layout: each micro-batch at
  // least its slowest stage's layers forward and backward, the rest of its
  // step and the communication every plan has (tensor, expert, context and
  // pipeline parallelism's as keep has it), with nothing recomputed, coded or
  // swapped, no gradient exchange and no optimizer step: a floor of
  // estimate()'s, for pruning layouts slower than those found.
  double time_floor_seconds(const ParallelLayout& layout, int worker = 0) const;
  // The pipeline stages a worker holds now.
  size_t stages_held(int worker = 0) const;

 private:
  struct Stage;
  struct StagePrice;
  struct Rank;
  struct Kept;
  Kept& kept(int worker) const;
  // One rank of the layout's tensor, context and expert split, its model made.
  std::shared_ptr<Rank> rank(const ParallelLayout& layout) const;
  // Each of the rank's layers' forward and backward seconds on the target
  // at a micro-batch (time_floor_seconds'); the rank's target made too.
  const std::vector<double>& rank_passes(Rank& rank, int micro_batch) const;
  // A stage's key: its rank's split and its blocks' kinds (alike stages share one).
  std::string stage_key(const ParallelLayout& layout, const StageSpan& span) const;
  // A stage's state bytes, kept by its key after the stage is let go.
  const StateBytes& state_of(Kept& kept, const ParallelLayout& layout, const StageSpan& span) const;
  Stage& stage(Kept& kept, const ParallelLayout& layout, const StageSpan& span) const;
  // Past LayoutRequest::stages_kept stages, or where the machine runs short
  // of memory, lets go of the less recently used half of the stages, and
  // where memory runs short of the split models too; called before a
  // layout is priced, never while one holds a stage.
  void make_room(Kept& kept) const;
  // `model` on the request's hardware (make_target's, the catalog read once).
  Target target_of(const LayerModel& model) const;
  // The data-parallel world of `layout`'s ranks, as the request's engine
  // holds the state and reduces the gradients.
  DataParallel world_of(const ParallelLayout& layout, const GroupLinks& links) const;
  PlanSpace space(Stage& stage, const ParallelLayout& layout, const GroupLinks& links, int64_t batch) const;
  const StagePrice& price(Stage& stage, const ParallelLayout& layout, const std::string& plan, const GroupLinks& links,
                          const StageSpan& span) const;
  const LayerModel whole_;  // alike experts collapsed where the request says so
  LayoutRequest request_;
  StateHolding holding_;  // the request's engine's, looked up once: a search's every layout asks
  TransformerShape shape_;
  std::optional<HardwareSpec> hardware_;  // the request's; none: the profiled machine
  bool host_link_ = false;
  double peak_flops_ = 0;                       // the target's; 0: unknown (a CPU)
  double model_flops_ = 0;                      // forward FLOPs a sample
  std::map<std::string, double> whole_output_;  // each layer's output bytes a sample, before any split
  // Each block's kind, numbered: blocks of one number hold and compute alike
  // (DeepSeek-V3's dense blocks apart from its mixtures, Gemma's windowed
  // blocks from its global ones), so that stages of alike spans are priced once.
  std::vector<int> block_kinds_;
  mutable std::mutex workers_mutex_;  // guards the list, not what a worker keeps
  mutable std::vector<std::unique_ptr<Kept>> workers_;
  mutable std::mutex ranks_mutex_;                              // guards the map; each rank guards itself
  mutable std::map<std::string, std::shared_ptr<Rank>> ranks_;  // by rank_key, shared by the workers
};

// One layout under a plan, as LayoutPricer prices it.
LayoutEstimate estimate_layout(const LayerModel& whole, const ParallelLayout& layout, const LayoutRequest& request,
                               const std::string& plan = "keep");

}  // namespace papaya::model
