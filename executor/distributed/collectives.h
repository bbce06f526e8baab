#pragma once
// The collectives of a data-parallel job, over LibTorch's c10d: a TCP store
// at the master's address and a Gloo process group (CPU tensors). One adapter
// over LibTorch 1.13's ProcessGroup and 2.x's Backend, whose collectives have
// the same signatures; the c10d headers stay in the .cpp.
#include <torch/torch.h>

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "executor/distributed/world.h"

namespace papaya::executor {

class Collectives {
 public:
  // Joins the job: waits up to `timeout` for every rank, and gives each
  // collective as long. Throws InputError if the ranks do not all come.
  Collectives(const World& world, std::chrono::milliseconds timeout);
  ~Collectives();
  Collectives(const Collectives&) = delete;
  Collectives& operator=(const Collectives&) = delete;

  const World& world() const { return world_; }
  // Whether this build has Gloo's process group (libgloo-dev's headers were
  // found): without it, the constructor throws.
  static bool available();

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

 private:
  struct Group;
  World world_;
  std::unique_ptr<Group> group_;
};

}  // namespace papaya::executor
