#pragma once
// Synthetic training data for a user's TorchScript module: its inputs drawn
// from their specs, and a loss made of what its forward returns.
#include <torch/script.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "executor/batch.h"
#include "model/catalog/input_spec.h"

namespace papaya::executor::torchscript {

at::ScalarType scalar_type(const model::InputSpec& spec);
std::string shape_text(const at::Tensor& t);  // "[2, 3, 64, 64]"

// One batch of inputs: floats standard normal, integers uniform below their
// bound (below 2 without one), bools either; drawn from `generator`.
std::vector<torch::jit::IValue> synthetic_inputs(const std::vector<model::InputSpec>& specs, int64_t batch,
                                                 at::Generator generator);

// How a forward's output becomes a loss.
enum class LossKind {
  output,         // a scalar: the loss itself
  cross_entropy,  // logits [B, C], or [B, T, V] (each position's next token): against uniform labels
  mse,            // against a standard normal target of the output's shape
};

// The loss `asked` (nullopt: chosen from the output's shape), or an
// InputError naming `label` and the output where none fits: a tuple, a
// scalar asked to be something else, a shape neither [B, C] nor [B, T, V]
// without a loss asked.
LossKind loss_kind(const torch::jit::IValue& output, std::optional<LossKind> asked, const std::string& label);
// The seed of the stream a network draws its loss's labels from where the
// data has none. Its own: labels drawn from the data's stream (seed 0 by
// default) in the inputs' shape and bound would be the token ids themselves,
// which a network with tied embeddings predicts from the start.
constexpr uint64_t kLabelSeed = 0x6c6162656c73;  // "labels"

// The loss against `target` (the data's: labels, or the mse target) or, where
// undefined, against one drawn from `generator` (on the CPU, for the whole
// batch `rows` says the output's rows are part of, and sliced); an
// InputError naming `label` where the target does not fit the output.
at::Tensor loss_of(const torch::jit::IValue& output, LossKind kind, at::Generator generator, const at::Tensor& target,
                   const Batch::Rows& rows, const std::string& label);

// Runs `work` (a forward, a loss, a backward of the user's module): an error
// LibTorch or its interpreter raises in it is the user's input, an InputError naming `label`,
// `when` and the error's last line ("mat1 and mat2 shapes cannot be
// multiplied (2x5 and 4x4)"), except those `passes` lets through as they are
// (running out of memory).
void run_users_code(const std::string& label, const std::string& when, const std::function<void()>& work,
                    const std::function<bool(const std::exception&)>& passes);

// "output", "cross-entropy", "mse"; parse_loss_kind's InputError names `where`.
const char* to_string(LossKind kind);
LossKind parse_loss_kind(const std::string& text, const std::string& where);

}  // namespace papaya::executor::torchscript
