#include "executor/finite.h"

#include <cmath>
#include <sstream>

namespace papaya::executor {
namespace {

bool finite(const torch::Tensor& t) { return !t.defined() || torch::isfinite(t).all().item<bool>(); }

// The first parameter, "layer (parameter)", whose gradient is not finite.
std::string first_non_finite_gradient(const Network& network) {
  for (const Layer* layer : network.layers()) {
    for (const auto& p : layer->named_parameters()) {
      if (!finite(p.value().grad())) return "layer '" + layer->path() + "' (" + p.key() + ")";
    }
  }
  for (const auto& p : network.named_parameters()) {  // any outside the layers
    if (!finite(p.value().grad())) return "parameter '" + p.key() + "'";
  }
  return "";
}

}  // namespace

std::string non_finite(const Network& network, double loss) {
  const std::string gradient = first_non_finite_gradient(network);
  if (std::isfinite(loss) && gradient.empty()) return "";
  std::ostringstream out;
  if (!std::isfinite(loss)) out << "the loss is " << loss;
  if (!gradient.empty()) out << (std::isfinite(loss) ? "" : "; ") << "the first non-finite gradient is in " << gradient;
  return out.str();
}

}  // namespace papaya::executor
