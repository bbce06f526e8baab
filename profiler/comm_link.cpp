#include "profiler/comm_link.h"

#include <chrono>

#include "model/median.h"

namespace papaya::profiler {

std::vector<double> comm_sizes() {
  std::vector<double> sizes;
  for (double bytes = 4096; bytes <= 64.0 * 1024 * 1024; bytes *= 4) sizes.push_back(bytes);
  return sizes;
}

std::vector<model::CommSample> time_allreduce(executor::Collectives& collectives, int repeats) {
  std::vector<model::CommSample> samples;
  for (const double bytes : comm_sizes()) {
    std::vector<torch::Tensor> tensor{torch::ones({static_cast<int64_t>(bytes / 4)})};
    collectives.allreduce_sum(tensor);  // warm-up: Gloo's buffers for this size
    std::vector<double> seconds;
    for (int i = 0; i < repeats; ++i) {
      const auto start = std::chrono::steady_clock::now();
      collectives.allreduce_sum(tensor);
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    // The slowest rank's median: the exchange ends when it does.
    std::vector<torch::Tensor> slowest{torch::tensor({model::median(seconds)}, torch::kDouble)};
    collectives.allreduce_max(slowest);
    samples.push_back({bytes, slowest[0].item<double>()});
  }
  return samples;
}

}  // namespace papaya::profiler
