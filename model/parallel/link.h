#pragma once
// A link between data-parallel ranks as the model prices an exchange over
// it: each collective costs a latency plus its bytes on the wire over the
// bandwidth. A ring allreduce of B bytes over N ranks puts 2(N-1)/N x B on
// each rank's wire.
#include <optional>
#include <vector>

namespace papaya::model {

struct CommSample {
  double bytes = 0;    // the tensor allreduced
  double seconds = 0;  // one allreduce (median)
};

struct LinkFit {
  double latency_s = 0;
  double bytes_per_s = 0;  // on the wire, per rank
  std::optional<double> r2;
  double seconds(double bytes, int ranks) const;  // one allreduce of `bytes` over `ranks`
  // One allgather (or reduce-scatter) of `bytes` in all, a 1/ranks share of
  // them on each rank: (N-1)/N x B on each rank's wire, half an allreduce's.
  double gather_seconds(double bytes, int ranks) const;
  // One send of `bytes` from one rank to another (a pipeline stage's output).
  double send_seconds(double bytes) const;
};

double ring_allreduce_wire_bytes(double bytes, int ranks);

// Least squares of the samples' seconds on their wire bytes, each residual
// relative to its time. Needs two distinct sizes (the caller's); throws
// InputError where the times do not grow with the bytes (no bandwidth can be
// read off them).
LinkFit fit_link(const std::vector<CommSample>& samples, int ranks);

}  // namespace papaya::model
