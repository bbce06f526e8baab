#include "executor/torchscript/recorded_step.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/jit/runtime/graph_executor.h>

namespace papaya::executor::torchscript {

RecordedStep record_step(Archive& archive, const std::vector<model::InputSpec>& inputs, int64_t batch,
                         std::optional<LossKind> asked, const std::function<bool(const std::exception&)>& passes) {
  at::Generator generator = at::detail::createCPUGenerator(0);
  const torch::jit::GraphOptimizerEnabledGuard unoptimized(false);
  archive.module.train();
  RecordedStep step;
  run_users_code(
      archive.path, "at batch " + std::to_string(batch),
      [&] {
        torch::jit::IValue output;
        {
          SavedTensorRecorder recorder(archive.module);
          output = archive.module.forward(synthetic_inputs(inputs, batch, generator));
          step.saved = recorder.saved();
        }
        step.loss = loss_kind(output, asked, archive.path);
        loss_of(output, step.loss, generator, {}, {}, archive.path).backward();
      },
      passes);
  return step;
}

}  // namespace papaya::executor::torchscript
