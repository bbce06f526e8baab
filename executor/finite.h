#pragma once
// Finding where training stopped being finite.
#include <string>

#include "executor/networks/network.h"

namespace papaya::executor {

// "" if the loss and every gradient are finite; else what is not, in words:
// the loss's value and the first layer (forward order) whose parameters'
// gradients hold NaN or Inf.
std::string non_finite(const Network& network, double loss);

}  // namespace papaya::executor
