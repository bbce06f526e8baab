#include "executor/storage/adaptive.h"

#include <algorithm>
#include <queue>
#include <tuple>

#include "model/error.h"

namespace papaya::executor {
namespace {

constexpr int choices[] = {2, 4, 8};

// The largest allowed width that fits the budget on its own.
int uniform_bits(int budget) { return budget >= 8 ? 8 : budget >= 4 ? 4 : 2; }

double noise(int bits) {
  const double levels = (1 << bits) - 1;
  return 1.0 / (levels * levels);
}

}  // namespace

AdaptiveBits::AdaptiveBits(int budget_bits, int every) : budget_(budget_bits), every_(every) {
  if (every < 1) throw InputError("adaptive re-estimation interval must be at least 1 step, not " + std::to_string(every));
}

int AdaptiveBits::add(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto known = std::find(keys_.begin(), keys_.end(), key);
  if (known != keys_.end()) return static_cast<int>(known - keys_.begin());
  keys_.push_back(key);
  bits_.push_back(uniform_bits(budget_));
  sensitivity_.push_back(0);
  numel_.push_back(0);
  return static_cast<int>(keys_.size()) - 1;
}

int AdaptiveBits::bits(int index) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bits_.at(index);
}

double AdaptiveBits::sensitivity(int index) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sensitivity_.at(index);
}

int64_t AdaptiveBits::numel(int index) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return numel_.at(index);
}

void AdaptiveBits::begin_step(int step) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (estimating_) bits_ = allocate(sensitivity_, numel_, budget_);
  estimating_ = step % every_ == 0;
  if (estimating_) std::fill(sensitivity_.begin(), sensitivity_.end(), 0.0);
}

AdaptiveBits::State AdaptiveBits::state() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {estimating_, bits_, sensitivity_, numel_};
}

void AdaptiveBits::restore(const State& state) {
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t n = keys_.size();
  if (state.bits.size() != n || state.sensitivity.size() != n || state.numel.size() != n) {
    throw InputError("adaptive-" + std::to_string(budget_) + " state for " + std::to_string(state.bits.size()) +
                     " tensors, the plan has " + std::to_string(n));
  }
  estimating_ = state.estimating;
  bits_ = state.bits;
  sensitivity_ = state.sensitivity;
  numel_ = state.numel;
}

void AdaptiveBits::report(int index, double sensitivity, int64_t numel) {
  std::lock_guard<std::mutex> lock(mutex_);
  sensitivity_.at(index) += sensitivity;
  numel_.at(index) = numel;
}

std::vector<int> AdaptiveBits::allocate(const std::vector<double>& sensitivity, const std::vector<int64_t>& numel,
                                        int budget_bits) {
  const size_t n = sensitivity.size();
  std::vector<int> bits(n, choices[0]);
  double total = 0, used = 0;
  for (size_t l = 0; l < n; ++l) {
    total += static_cast<double>(numel[l]);
    used += static_cast<double>(numel[l]) * choices[0];
  }
  const double capacity = budget_bits * total;
  // Greedy on variance saved per extra bit; each tensor's steps (2->4, 4->8)
  // save less per bit as it goes, so the greedy order is the LP optimum's.
  using Step = std::tuple<double, size_t, int>;  // (saving per bit, tensor, index into choices of the target)
  std::priority_queue<Step> steps;
  const auto push = [&](size_t l, int to) {
    if (to >= 3) return;
    const double per_bit = sensitivity[l] * (noise(choices[to - 1]) - noise(choices[to])) / (choices[to] - choices[to - 1]);
    steps.emplace(per_bit, l, to);
  };
  for (size_t l = 0; l < n; ++l) push(l, 1);
  while (!steps.empty()) {
    const auto [per_bit, l, to] = steps.top();
    steps.pop();
    const double cost = static_cast<double>(numel[l]) * (choices[to] - choices[to - 1]);
    if (used + cost > capacity) continue;
    used += cost;
    bits[l] = choices[to];
    push(l, to + 1);
  }
  return bits;
}

}  // namespace papaya::executor
