#pragma once
// One training step of a TorchScript archive on synthetic inputs, its
// forward recorded (`papaya inspect --batch`): the loss made of its output
// and what each of its modules saved for backward. The graph runs as
// written, so that the saves name their modules (saved_tensors.h).
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "executor/torchscript/archive.h"
#include "executor/torchscript/saved_tensors.h"
#include "executor/torchscript/synthetic_data.h"
#include "model/catalog/input_spec.h"

namespace papaya::executor::torchscript {

struct RecordedStep {
  LossKind loss = LossKind::output;
  SavedBytes saved;
};

// Inputs drawn from `inputs` at `batch` (seed 0); the loss `asked`, or
// as loss_kind makes it of the output. An error of the archive's code is an
// InputError naming `archive.path` (run_users_code), but those `passes` lets
// through (running out of memory).
RecordedStep record_step(Archive& archive, const std::vector<model::InputSpec>& inputs, int64_t batch,
                         std::optional<LossKind> asked, const std::function<bool(const std::exception&)>& passes);

}  // namespace papaya::executor::torchscript
