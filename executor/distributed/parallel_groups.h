#pragma once
// The process groups of a parallel training run, built from its degrees as
// Megatron-LM's parallel_state builds them: the job's ranks in Megatron-LM's
// order — a tensor-parallel group's adjacent, then the data-parallel ranks,
// then the pipeline stages. Each kind of group is the job itself where it
// holds all of its ranks, a subgroup of them otherwise, and none where it is
// one rank.
#include <torch/torch.h>

#include <chrono>
#include <memory>

#include "executor/distributed/collectives.h"
#include "executor/distributed/world.h"

namespace papaya::executor {

class ParallelGroups {
 public:
  // Joins the job (Collectives' constructor: every rank waits up to
  // `timeout` for the others), then makes its groups; `tensor` and
  // `pipeline` divide the world's size, the data-parallel ranks the rest.
  // Throws InputError as Collectives does.
  ParallelGroups(const World& world, std::chrono::milliseconds timeout, torch::Device device, int tensor, int pipeline);
  ~ParallelGroups();
  ParallelGroups(const ParallelGroups&) = delete;
  ParallelGroups& operator=(const ParallelGroups&) = delete;

  Collectives& job() { return *job_; }
  // This rank's groups; nullptr where one is a single rank.
  Collectives* tensor();
  Collectives* data();
  Collectives* pipeline();
  // This rank's place in each.
  int tensor_rank() const { return tensor_rank_; }
  int data_rank() const { return data_rank_; }
  int stage() const { return stage_; }

 private:
  Collectives* ranks_of(int size, const std::unique_ptr<Collectives>& group);
  std::unique_ptr<Collectives> job_;
  int tensor_size_ = 1, data_size_ = 1, pipeline_size_ = 1;
  int tensor_rank_ = 0, data_rank_ = 0, stage_ = 0;
  std::unique_ptr<Collectives> tensor_group_, data_group_, stage_group_;
};

}  // namespace papaya::executor
