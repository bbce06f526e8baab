#pragma once
// `papaya profile`: trains a network at several batch sizes on
// synthetic data and measures, layer by layer, what the performance model
// needs (model/profile.h): forward and backward time, the allocator's bytes
// around each, the tensors each layer saves, analytic costs; per segment its
// recompute time; per batch the iteration split into forward, backward and
// optimizer step, static and peak memory; every layer (and each segment's
// work between its layers) once more at a larger probe batch
// (profiler/layer_probe.h); the machine. No LibTorch here.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/catalog/network_config.h"
#include "model/profile.h"

namespace papaya::profiler {

// The whole-network plans a profile may time a step under: the codec's
// (model::calibration_plans().codec) and the recompute's, in that order.
std::vector<std::string> calibration_plans();

struct ProfileOptions {
  model::NetworkConfig network;  // parsed once by the caller (model::load_network_config), at its sequence length
  // A transformer's first this many blocks only, the fit scaling the model to
  // all (model/fit/block_scaling.h); 0: all where their weights, gradients and
  // AdamW state (16 bytes a parameter) take at most half of the device's
  // memory (or of memory_limit), else 2, said through on_warning.
  int profile_blocks = 0;
  std::vector<int> batches = {1, 2, 4, 8};
  std::string device = "cpu";      // cpu, cuda, cuda:N
  std::string precision = "fp32";  // fp32, bf16, amp-bf16, amp-fp16
  int warmup = 3;                  // steps per batch left out of the figures
  // Measured steps per batch: their median is what is recorded, and the
  // microsecond layer times of small batches vary by tens of percent from
  // step to step on a shared machine.
  int steps = 10;
  // The batch sizes are measured in turn, this many times over (the steps
  // split between the rounds, the warm-up repeated as one step), and each time
  // is the median over all the batch's steps: a slow moment of a shared
  // machine falls on one round of one batch instead of on all the steps of
  // one batch, whose time the slope to larger batches would then carry.
  int rounds = 3;
  // The batch every layer is also timed at alone (profiler/layer_probe.h):
  // none given, 16x the largest batch; 0: no probes.
  std::optional<int> probe_batch;
  // Each layer's scratch with its slots stored (LayerProfile::stored); off
  // where the model is made over for another shape or sequence length,
  // which keeps only lines.
  bool measure_stored = true;
  // The calibration plans a step is timed under, each beside a keep step
  // (model::PlanStep): none where the model is made from another profile's
  // figures (the largest of three fractions' or lengths',
  // model/fit/extrapolation.h), which leaves these unread; not the codec's
  // where this machine's codec speed will not be read.
  std::vector<std::string> plan_steps = calibration_plans();
  uint64_t seed = 0;
  // > 0: a batch whose allocated bytes pass it counts as out of memory, as on
  // a device with that much memory (emulates one on CPU).
  int64_t memory_limit = 0;
  std::function<void(int done, int total, const std::string& note)> on_progress;
  // Something the user should know that does not stop profiling (e.g. why
  // CUPTI could not be used).
  std::function<void(const std::string& message)> on_warning;

  // InputError for steps, rounds, warm-up, batches or a probe batch that
  // cannot be profiled (before anything is built).
  void validate() const;
};

// Batches are profiled in increasing order; one that runs out of memory is
// recorded as such (oom) and the others go on. Throws InputError for options
// that do not validate, a device, precision or block count that cannot be
// had, weights, gradients and AdamW state (of the blocks profiled) more than
// the device's memory (or memory_limit), or if every batch runs out of memory.
model::Profile profile_network(const ProfileOptions& options);

}  // namespace papaya::profiler
