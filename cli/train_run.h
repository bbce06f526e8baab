#pragma once
// Training a network of the zoo under one plan for a number of steps, as
// `papaya train` and `papaya validate` do: the data, a fresh network on the
// device (created after the allocator's tracker, so that its weights count),
// the plan read against it and applied, AdamW steps. Torch-free: a caller
// that reads the report includes executor/trainer.h.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "model/plan.h"

namespace papaya::executor {
struct TrainReport;
}

namespace papaya::cli {

struct TrainRun {
  std::string network = "gpt-tiny";  // config name or path
  std::string device = "cpu";        // cpu, cuda, cuda:N
  std::string precision = "fp32";    // fp32, bf16
  std::string data;                  // text file; "": synthetic data
  std::string plan = "keep";         // plan name or file, read against the built network
  std::optional<model::Plan> planned;  // instead of `plan`: one already made for this network
  int64_t batch = 8;
  int steps = 20;
  uint64_t seed = 0;
  double lr = 1e-3;
  int adaptive_every = 50;
  bool record_stored_bytes = false;  // TrainReport::stored_bytes
};

// What was built, told before the first step (for a headline).
struct TrainSetup {
  std::string network;      // the config's name
  std::string family;       // gpt, bert, vit, resnet, mlp
  int64_t parameters = 0;
  std::string device;       // "cpu", "cuda:0"
  std::string device_name;  // executor::device_name
  std::string plan;         // the plan's name
  std::string data;         // what the data is, in words
};

struct TrainCallbacks {
  std::function<void(const TrainSetup&)> on_start;
  std::function<void(int step, int steps, double loss)> on_step;
};

// The checks of `run` that need nothing built: the device (this build and
// machine), the precision and the network config. Throws InputError.
void check_train_run(const TrainRun& run);

// Trains as `run` says. Throws InputError for bad input (the checks above, a
// plan that does not fit the network, an unreadable data file); running out
// of memory comes out as the allocator's error (profiler::is_out_of_memory).
executor::TrainReport train_run(const TrainRun& run, const TrainCallbacks& callbacks = {});

}  // namespace papaya::cli
