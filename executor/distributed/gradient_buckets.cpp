#include "executor/distributed/gradient_buckets.h"

namespace papaya::executor {

std::vector<GradientBucket> gradient_buckets(const std::vector<torch::Tensor>& parameters, int64_t bucket_bytes) {
  std::vector<GradientBucket> buckets;
  int64_t bytes = bucket_bytes;
  for (auto it = parameters.rbegin(); it != parameters.rend(); ++it) {
    if (bytes >= bucket_bytes) {
      buckets.emplace_back();
      bytes = 0;
    }
    GradientBucket& bucket = buckets.back();
    bucket.parameters.push_back(*it);
    bucket.offsets.push_back(bucket.numel);
    bucket.numel += it->numel();
    bytes += static_cast<int64_t>(it->nbytes());
  }
  return buckets;
}

}  // namespace papaya::executor
