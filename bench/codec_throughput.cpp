// The codec's throughput against this machine's memory copy, the physical
// limit of a pass that reads the values once and writes less: quantize and
// dequantize at 8, 4 and 2 bits, and the inverted GELU backward against the
// native one, in GB/s of fp32 input, with 1 thread and with every core, at
// each instruction-set level this CPU has (storage/cpu_isa.h).
// The values are 16 tensors of 4 MiB (64 MiB: past every cache), the size
// of a layer's activations at small batches: a single 64 MiB tensor would
// time the kernel's page faults, as glibc maps and unmaps each such block.
// Run as `build/bench/codec_throughput`; the figures go to RESULTS.md.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "executor/storage/codec.h"
#include "executor/storage/cpu_isa.h"
#include "executor/storage/invert.h"
#include "model/strategy.h"

namespace {

// The fastest of `repeats` runs, in seconds, after one to warm up.
double fastest(const std::function<void()>& work, int repeats = 7) {
  work();
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    work();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

}  // namespace

int main() {
  using namespace papaya::executor;
  constexpr int64_t n = int64_t{1} << 20, tensors = 16;
  torch::manual_seed(0);
  std::vector<torch::Tensor> xs, grads, outputs, rights, copies;
  for (int t = 0; t < tensors; ++t) {
    xs.push_back(torch::randn({n}));
    grads.push_back(torch::randn({n}));
    outputs.push_back(torch::gelu(xs.back()));
    rights.push_back(xs.back() >= branch_point(papaya::model::LayerKind::gelu));
    copies.push_back(torch::empty({n}));
  }
  const double bytes = static_cast<double>(n * tensors) * sizeof(float);
  const auto each = [&](const std::function<void(int)>& work) {
    return [&, work] {
      for (int t = 0; t < tensors; ++t) work(t);
    };
  };
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const cpu_isa::Level cpu = cpu_isa::level();
  std::printf("%-28s %8s %9s %10s\n", "pass", "threads", "level", "GB/s");
  for (const int threads : {1, cores}) {
    torch::set_num_threads(threads);
    cpu_isa::limit(cpu);
    // `leveled`: a pass of papaya's compiled at each level, run at the one limit() set.
    const auto report = [&](const char* what, double seconds, bool leveled = false) {
      std::printf("%-28s %8d %9s %10.2f\n", what, threads, leveled ? cpu_isa::to_string(cpu_isa::level()) : "-",
                  bytes / seconds / 1e9);
    };
    report("memory copy", fastest(each([&](int t) { copies[t].copy_(xs[t]); })));
    report("GELU backward, native", fastest(each([&](int t) { torch::gelu_backward(grads[t], xs[t]); })));
    for (int l = static_cast<int>(cpu); l >= 0; --l) {
      cpu_isa::limit(static_cast<cpu_isa::Level>(l));
      report(
          "GELU backward, inverted",
          fastest(each([&](int t) { input_grad_from_output(papaya::model::LayerKind::gelu, grads[t], outputs[t], rights[t]); })),
          true);
    }
    for (const int bits : {8, 4, 2}) {
      const QuantLayout layout{bits, papaya::model::default_group_size(bits), n, n};
      std::vector<torch::Tensor> buffers(tensors);
      for (int l = static_cast<int>(cpu); l >= 0; --l) {
        cpu_isa::limit(static_cast<cpu_isa::Level>(l));
        report(("quantize " + std::to_string(bits) + " bits").c_str(),
               fastest(each([&](int t) { buffers[t] = quantize(xs[t], layout); })), true);
      }
      report(("dequantize " + std::to_string(bits) + " bits").c_str(),
             fastest(each([&](int t) { dequantize(buffers[t], layout, xs[t].sizes(), torch::kFloat); })));
    }
  }
  return 0;
}
