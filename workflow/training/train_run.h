#pragma once
// Training a network of the zoo under one plan for a number of steps, as
// `papaya train` and `papaya validate` do: the data, a fresh network on the
// device (created after the allocator's tracker, so that its weights count),
// the plan read against it and applied, AdamW steps; optionally saving the
// training state and going on from a saved one. Torch-free: a caller that
// reads the report includes executor/trainer.h.
#include <cstdint>
#include <functional>
#include <string>

#include "workflow/training/train_settings.h"

namespace papaya::executor {
struct TrainReport;
}

namespace papaya::workflow {

// What was built, told before the first step (for a headline).
struct TrainSetup {
  std::string network;  // the config's name
  std::string family;   // gpt, bert, vit, resnet, mlp
  int64_t parameters = 0;
  int64_t trainable_parameters = 0;  // fewer where fine-tuning freezes some
  std::string device;                // "cpu", "cuda:0"
  std::string device_name;           // executor::device_name
  std::string plan;                  // the plan's name
  std::string data;                  // what the data is, in words
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
// machine), the precision, the parallelism and the network config (or the
// state to resume), and what saving the state allows; fills in the
// network's precision and the micro-batches where none are given. Throws
// InputError; std::logic_error where run.network_config is missing though
// no state's network is resumed.
void prepare_train_run(TrainRun& run);
// Data-parallel ranks on a CUDA device (nothing to check on a CPU): a build
// with NCCL, the device "cuda" (each rank takes cuda:LOCAL_RANK) and a GPU
// for each of the `ranks_here` ranks of this host. Throws InputError.
void check_rank_devices(const TrainRun& run, int ranks_here);

// Trains as `run` (prepared) says. The report's losses are the whole run's (a resumed
// state's first). Throws InputError for bad input (the checks above, a plan
// that does not fit the network, an unreadable data file, a damaged or
// mismatched state, a loss or gradient that is not finite); running out of
// memory comes out as the allocator's error (profiler::is_out_of_memory).
executor::TrainReport train_run(const TrainRun& run, const TrainCallbacks& callbacks = {});

}  // namespace papaya::workflow
