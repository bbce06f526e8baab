#pragma once
// A training run's state on disk (papaya train --save / --resume): the
// weights and buffers, the optimizer's state, the data's position, every
// random generator (dropout, stochastic rounding, the data), the adaptive
// controllers' estimates, the steps done and the losses so far, and the
// caller's description of the run (network config, plan, options) as JSON.
// Restored into a network built and planned as the description says, the
// run goes on bit for bit as if it had never stopped.
#include <torch/torch.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "executor/data.h"
#include "executor/networks/network.h"
#include "executor/plan_apply.h"

namespace papaya::executor {

struct TrainingProgress {
  int steps_done = 0;
  std::vector<double> losses;  // one per step done
};

// Everything a step changes, by reference.
struct TrainingParts {
  Network& network;
  torch::optim::Optimizer& optimizer;
  DataSource& data;
  const AppliedPlan& applied;
};

// Writes through a temporary file and a rename: a crash mid-write leaves the
// previous file (or none), never a part of one. Throws InputError if the
// file cannot be written.
void save_training_state(const std::string& path, const nlohmann::json& run, const TrainingProgress& progress,
                         const TrainingParts& parts);

// A state read back: first its description, then (once the network it
// describes is built) restored into it.
class TrainingState {
 public:
  // Throws InputError naming the file if it is unreadable or not a papaya
  // training state.
  static TrainingState read(const std::string& path, const torch::Device& device);

  const nlohmann::json& run() const { return run_; }
  const TrainingProgress& progress() const { return progress_; }
  // Throws InputError naming the file and the first thing that does not
  // match (a parameter's name or shape, the adaptive tensors).
  void restore(const TrainingParts& parts) const;

 private:
  std::string path_;
  std::shared_ptr<torch::serialize::InputArchive> archive_;
  nlohmann::json record_;  // the "papaya" record: the run, progress and the tensors' names
  nlohmann::json run_;
  TrainingProgress progress_;
};

}  // namespace papaya::executor
