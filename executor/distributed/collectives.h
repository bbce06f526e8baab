#pragma once
// The collectives of a data-parallel job, over LibTorch's c10d: a TCP store
// at the master's address and a Gloo process group (CPU tensors) or, for a
// CUDA device, an NCCL one (one GPU per rank). One adapter over LibTorch
// 1.13's ProcessGroup and 2.x's Backend, whose concrete groups have the same
// collective signatures; the c10d headers stay in the .cpp.
#include <torch/torch.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "executor/distributed/world.h"

namespace papaya::executor {

class Collectives {
 public:
  // Joins the job: waits up to `timeout` for every rank, and gives each
  // collective as long. The tensors it moves live on `device` (a CUDA
  // device: NCCL, made the current one). Throws InputError if the ranks do
  // not all come, or this build lacks the device's backend.
  Collectives(const World& world, std::chrono::milliseconds timeout, torch::Device device = torch::kCPU);
  // A group of some of `job`'s ranks, `name` apart from the job's other
  // groups, this rank its `rank` of `size`: each member makes it (the job's
  // ranks their groups in the same order), on the job's store, device and
  // timeout. Throws InputError as the job's constructor does.
  Collectives(Collectives& job, const std::string& name, int rank, int size);
  ~Collectives();
  Collectives(const Collectives&) = delete;
  Collectives& operator=(const Collectives&) = delete;

  const World& world() const { return world_; }
  torch::Device device() const { return device_; }
  // Whether this build has Gloo's process group (libgloo-dev's headers were
  // found), and NCCL's (LibTorch with CUDA and nccl.h): without the one a
  // device needs, the constructor throws.
  static bool available();
  static bool nccl_available();

  // In place, over every rank. Throw InputError where a rank has gone or
  // the timeout passed: the job cannot go on.
  void allreduce_sum(std::vector<torch::Tensor>& tensors);
  void allreduce_max(std::vector<torch::Tensor>& tensors);

  // An allreduce under way, its tensors the caller's to keep until wait(),
  // which ends it (and throws as allreduce_sum does).
  class Pending {
   public:
    explicit Pending(std::function<void()> wait) : wait_(std::move(wait)) {}
    void wait() const { wait_(); }

   private:
    std::function<void()> wait_;
  };
  // Starts a sum over every rank and returns at once. Every rank must start
  // its collectives in the same order.
  Pending start_allreduce_sum(std::vector<torch::Tensor>& tensors);
  void broadcast(std::vector<torch::Tensor>& tensors, int root);
  // Starts a sum over every rank into `root`'s tensors (the others' are
  // left as they were) and returns at once.
  Pending start_reduce_sum(std::vector<torch::Tensor>& tensors, int root);

  // Point to point, between two ranks, matched by `tag`: a send under way
  // (its tensors the caller's to keep until wait()), and a receive into
  // `tensors`, which returns once they are filled.
  Pending start_send(std::vector<torch::Tensor>& tensors, int to, int tag);
  void receive(std::vector<torch::Tensor>& tensors, int from, int tag);

  // The mean of `value` over the ranks.
  double mean(double value);
  // Each rank's `values`, rank by rank: a world.size x values.size() table.
  std::vector<std::vector<double>> gather(const std::vector<double>& values);

 private:
  struct Group;
  // The process group over group_->store, or InputError naming `joining`.
  void open(const std::string& joining);
  World world_;
  torch::Device device_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<Group> group_;
};

}  // namespace papaya::executor
