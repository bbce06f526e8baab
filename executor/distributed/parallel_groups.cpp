#include "executor/distributed/parallel_groups.h"

#include <string>

namespace papaya::executor {

ParallelGroups::ParallelGroups(const World& world, std::chrono::milliseconds timeout, torch::Device device, int tensor,
                               int pipeline)
    : job_(std::make_unique<Collectives>(world, timeout, device)),
      tensor_size_(tensor),
      data_size_(world.size / (tensor * pipeline)),
      pipeline_size_(pipeline) {
  const int rank = world.rank;
  tensor_rank_ = rank % tensor;
  data_rank_ = rank / tensor % data_size_;
  stage_ = rank / (tensor * data_size_);
  // Every member makes each of its groups, in the same order on every rank.
  const auto subgroup = [&](int size, const std::string& name, int member) -> std::unique_ptr<Collectives> {
    if (size <= 1 || size == world.size) return nullptr;
    return std::make_unique<Collectives>(*job_, name, member, size);
  };
  tensor_group_ = subgroup(tensor, "tensor" + std::to_string(rank / tensor), tensor_rank_);
  data_group_ = subgroup(data_size_, "data" + std::to_string(tensor_rank_) + "." + std::to_string(stage_), data_rank_);
  stage_group_ = subgroup(pipeline, "stages" + std::to_string(tensor_rank_) + "." + std::to_string(data_rank_), stage_);
}

ParallelGroups::~ParallelGroups() = default;

Collectives* ParallelGroups::ranks_of(int size, const std::unique_ptr<Collectives>& group) {
  return size <= 1 ? nullptr : group ? group.get() : job_.get();
}

Collectives* ParallelGroups::tensor() { return ranks_of(tensor_size_, tensor_group_); }
Collectives* ParallelGroups::data() { return ranks_of(data_size_, data_group_); }
Collectives* ParallelGroups::pipeline() { return ranks_of(pipeline_size_, stage_group_); }

}  // namespace papaya::executor
