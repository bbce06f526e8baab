#pragma once
// Training a network of the zoo under one plan for a number of steps, as
// `papaya train` and `papaya validate` do: the data, a fresh network on the
// device (created after the allocator's tracker, so that its weights count),
// the plan read against it and applied, AdamW steps; optionally saving the
// training state and going on from a saved one. Torch-free: a caller that
// reads the report includes executor/trainer.h.
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "executor/distributed/world.h"
#include "model/plan.h"

namespace papaya::executor {
struct TrainReport;
}

namespace papaya::cli {

struct TrainRun {
  std::string network = "gpt-tiny";    // config name or path
  std::optional<int> seq_len;          // tokens per sample instead of the config's
  std::string device = "cpu";          // cpu, cuda, cuda:N
  std::string precision = "fp32";      // fp32, bf16, amp-bf16, amp-fp16
  std::string data;                    // text file; "": synthetic data
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
  // Go on from this training state to `steps`: the network, plan and options
  // are the state's; those of the above named in `given` ("--batch") must
  // equal them.
  std::string resume;
  std::set<std::string> given;
  // A rank of a data-parallel job (executor/distributed/): `batch` is its
  // slice of the global batch; the collectives wait `timeout_s` at most.
  std::optional<executor::World> world;
  double timeout_s = 300;
  int zero = 0;  // 1: ZeRO-1, AdamW's state sharded across the ranks
};

// What was built, told before the first step (for a headline).
struct TrainSetup {
  std::string network;  // the config's name
  std::string family;   // gpt, bert, vit, resnet, mlp
  int64_t parameters = 0;
  std::string device;       // "cpu", "cuda:0"
  std::string device_name;  // executor::device_name
  std::string plan;         // the plan's name
  std::string data;         // what the data is, in words
  // The run's (a resumed state's) precision, batch and seed.
  std::string precision;
  int64_t batch = 0;
  uint64_t seed = 0;
  int first_step = 0;  // steps already done by a resumed state
};

struct TrainCallbacks {
  std::function<void(const TrainSetup&)> on_start;
  std::function<void(int step, int steps, double loss)> on_step;
  // Asked after each step: true stops training there (saved first, with `save`).
  std::function<bool()> stop_requested;
};

// The checks of `run` that need nothing built: the device (this build and
// machine), the precision and the network config (or the state to resume).
// Throws InputError.
void check_train_run(const TrainRun& run);
// Data-parallel ranks on a CUDA device (nothing to check on a CPU): a build
// with NCCL, --device cuda (each rank takes cuda:LOCAL_RANK) and a GPU for
// each of the `ranks_here` ranks of this host. Throws InputError.
void check_rank_devices(const TrainRun& run, int ranks_here);

// Trains as `run` says. The report's losses are the whole run's (a resumed
// state's first). Throws InputError for bad input (the checks above, a plan
// that does not fit the network, an unreadable data file, a damaged or
// mismatched state, a loss or gradient that is not finite); running out of
// memory comes out as the allocator's error (profiler::is_out_of_memory).
executor::TrainReport train_run(const TrainRun& run, const TrainCallbacks& callbacks = {});

}  // namespace papaya::cli
