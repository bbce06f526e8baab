#include "model/parallel/link.h"

#include <algorithm>

#include "model/curves.h"
#include "model/error.h"

namespace papaya::model {

double ring_allreduce_wire_bytes(double bytes, int ranks) { return 2.0 * (ranks - 1) / ranks * bytes; }

double LinkFit::seconds(double bytes, int ranks) const {
  return latency_s + ring_allreduce_wire_bytes(bytes, ranks) / bytes_per_s;
}

double LinkFit::gather_seconds(double bytes, int ranks) const {
  return latency_s + ring_allreduce_wire_bytes(bytes, ranks) / 2 / bytes_per_s;
}

double LinkFit::send_seconds(double bytes) const { return latency_s + bytes / bytes_per_s; }

LinkFit fit_link(const std::vector<CommSample>& samples, int ranks) {
  // Least squares of the relative residuals (weights 1/t²): the sizes span
  // four orders of magnitude, and the small ones alone show the latency.
  double sw = 0, swx = 0, swy = 0, swxx = 0, swxy = 0;
  for (const auto& s : samples) {
    const double w = 1 / (s.seconds * s.seconds), x = ring_allreduce_wire_bytes(s.bytes, ranks), y = s.seconds;
    sw += w;
    swx += w * x;
    swy += w * y;
    swxx += w * x * x;
    swxy += w * x * y;
  }
  const double slope = (sw * swxy - swx * swy) / (sw * swxx - swx * swx);
  if (!(slope > 0)) throw InputError("the allreduce times do not grow with their bytes: no bandwidth to fit");
  LinkFit fit{std::max(0.0, (swy - slope * swx) / sw), 1 / slope, std::nullopt};
  std::vector<double> measured, predicted;
  for (const auto& s : samples) {
    measured.push_back(s.seconds);
    predicted.push_back(fit.seconds(s.bytes, ranks));
  }
  fit.r2 = r_squared(measured, predicted);
  return fit;
}

}  // namespace papaya::model
