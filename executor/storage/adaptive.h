#pragma once
// Adaptive bits (GACT, ICML'22). Each adaptive tensor l is quantized with
// b_l in {2, 4, 8} bits, chosen to minimise the predicted gradient variance
//   sum_l C_l * numel_l / (2^b_l - 1)^2   subject to   sum_l numel_l * b_l <= budget * sum_l numel_l.
// C_l, the tensor's sensitivity, is how much its layer's gradients change
// when the tensor is quantized: every `every` steps, backward recomputes the
// layer's gradients from the restored tensor requantized to 2 bits and
// reports ||change||^2 * (2^2 - 1)^2 / numel_l (one extra layer backward per
// tensor on those steps; a tensor saved by several layers sums their
// changes). Until the first estimate, every tensor gets the budget's bits.
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace papaya::executor {

class AdaptiveBits {
 public:
  AdaptiveBits(int budget_bits, int every);

  // Registers a tensor (the "path:slot" of its storage); returns its index,
  // the same for the same key.
  int add(const std::string& key);
  int bits(int index) const;
  const std::vector<std::string>& keys() const { return keys_; }

  // Called before each step's forward: steps 0, every, 2*every, ... estimate
  // sensitivities; the step after an estimate applies the new bits.
  void begin_step(int step);
  bool estimating() const { return estimating_; }
  // From backward (any thread) on an estimating step: tensor `index` of
  // `numel` elements; reports for one tensor add up.
  void report(int index, double sensitivity, int64_t numel);
  double sensitivity(int index) const;
  int64_t numel(int index) const;  // as last reported

  // What the controller has learnt so far, to resume training from.
  struct State {
    bool estimating = false;
    std::vector<int> bits;
    std::vector<double> sensitivity;
    std::vector<int64_t> numel;
  };
  State state() const;
  // Throws InputError if `state` is for another number of tensors.
  void restore(const State& state);

  // The allocation for sensitivities and sizes under an average-bits budget.
  static std::vector<int> allocate(const std::vector<double>& sensitivity, const std::vector<int64_t>& numel, int budget_bits);

 private:
  int budget_, every_;
  bool estimating_ = false;
  std::vector<std::string> keys_;
  std::vector<int> bits_;
  std::vector<double> sensitivity_;
  std::vector<int64_t> numel_;
  mutable std::mutex mutex_;
};

}  // namespace papaya::executor
