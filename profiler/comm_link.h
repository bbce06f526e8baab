#pragma once
// `papaya profile --comm`: this host's link between data-parallel ranks,
// timed. Allreduces of fp32 tensors from 4 KiB to 64 MiB, each size's median
// of a few after a warm-up, every rank taking part; the model's link (latency
// and bandwidth) is fitted to them (model/parallel/link.h).
#include <vector>

#include "executor/distributed/collectives.h"
#include "model/parallel/link.h"

namespace papaya::profiler {

// The sizes in bytes, 4 KiB x 4^k up to 64 MiB.
std::vector<double> comm_sizes();

// One median time per comm_sizes() entry, on every rank alike.
std::vector<model::CommSample> time_allreduce(executor::Collectives& collectives, int repeats = 5);

}  // namespace papaya::profiler
