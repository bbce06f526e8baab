#pragma once
// What a training run is asked to do (`papaya train`'s options, or
// `validate`'s for each of its runs), before anything is built.
#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "executor/distributed/world.h"
#include "model/catalog/network_config.h"
#include "model/parallel/parallel_layout.h"
#include "model/plan.h"

namespace papaya::workflow {

struct TrainRun {
  std::string network = "gpt-tiny";  // config name or path, as the user named it
  // The network, loaded by the caller; nullopt where a resumed state's
  // network is trained as it was.
  std::optional<model::NetworkConfig> network_config;
  std::string device = "cpu";          // cpu, cuda, cuda:N
  std::string precision;               // fp32, bf16, amp-bf16, amp-fp16; "": the network's
  std::string data;                    // a data file (text, or recorded batches); "": synthetic data
  std::string plan = "keep";           // plan name or file, read against the built network
  std::optional<model::Plan> planned;  // instead of `plan`: one already made for this network
  int64_t batch = 8;
  int steps = 20;  // in all, counting a resumed state's
  uint64_t seed = 0;
  double lr = 1e-3;
  int adaptive_every = 50;
  bool record_stored_bytes = false;  // TrainReport::stored_bytes
  std::string save;                  // the training state goes here at the end (and on a stop)
  int save_every = 0;                // and every so many steps; 0: at the end only
  std::string save_model;            // a TorchScript network trained, as an archive, when `save` would be
  // Go on from this training state to `steps`: the network, plan and options
  // are the state's; those of the above named in `given` must equal them:
  // "network", "plan", "precision", "batch", "seed", "lr", "data",
  // "adaptive_every".
  std::string resume;
  std::set<std::string> given;
  // A rank of a data-parallel job (executor/distributed/): `batch` is its
  // slice of the global batch; the collectives wait `timeout_s` at most.
  std::optional<executor::World> world;
  double timeout_s = 300;
  // A layout of one rank whose micro-batches (0) prepare_train_run sets.
  static model::ParallelLayout unprepared_layout() {
    model::ParallelLayout layout;
    layout.micro_batches = 0;
    return layout;
  }
  // How the job's ranks are laid out, as papaya's trainer runs a layout
  // (model::Engine::papaya): tensor-parallel groups of `tensor` adjacent
  // ranks (Megatron's order), each group a data-parallel rank taking the
  // same `batch`, `sequence` splitting the tokens between the projections
  // too; `pipeline` stages (1F1B) of as many ranks each, `batch` then a
  // micro-batch and a pipeline's batch `micro_batches` of them (0: 2 a
  // stage), every stage drawing it whole; `zero_stage` 1-3 shards the static
  // state across the `data` data-parallel ranks. prepare_train_run sets
  // `data` from the world where there is one, `micro_batch` from `batch`,
  // and checks the whole.
  model::ParallelLayout layout = unprepared_layout();
  int64_t global_batch() const { return layout.pipeline > 1 ? batch * layout.micro_batches : batch; }
  // Whether each rank holds some of the layers (tensor or pipeline parallelism).
  bool splits_layers() const { return layout.pipeline > 1 || layout.tensor > 1; }
  // The data-parallel ranks the job's ranks make: each a slice of the global batch.
  int data_ranks() const { return world ? world->size / (layout.tensor * layout.pipeline) : 1; }
};

}  // namespace papaya::workflow
