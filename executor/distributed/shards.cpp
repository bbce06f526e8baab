#include "executor/distributed/shards.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

#include "executor/distributed/parameter_storage.h"

namespace papaya::executor {

std::vector<ShardSpan> shard_spans(const std::vector<torch::Tensor>& parameters, int ranks) {
  int64_t total = 0;
  for (const auto& p : parameters) total += p.numel();
  const auto cut = [&](int64_t r) { return r * total / ranks; };  // where rank r's run starts
  std::vector<ShardSpan> out;
  int64_t before = 0;
  int owner = 0;
  for (size_t i = 0; i < parameters.size(); ++i) {
    if (!parameters[i].is_contiguous()) throw std::logic_error("shard_spans: a parameter is not contiguous");
    const int64_t end = before + parameters[i].numel();
    for (int64_t at = before; at < end;) {
      while (cut(owner + 1) <= at) ++owner;
      const int64_t until = std::min(end, cut(owner + 1));
      out.push_back({i, at - before, until - at, owner});
      at = until;
    }
    before = end;
  }
  return out;
}

std::vector<BucketRun> bucket_runs(const GradientBucket& bucket, const std::vector<torch::Tensor>& parameters,
                                   const std::vector<ShardSpan>& spans) {
  std::unordered_map<const void*, std::vector<ShardSpan>> by_parameter;
  for (const ShardSpan& span : spans) by_parameter[parameters[span.parameter].unsafeGetTensorImpl()].push_back(span);
  std::vector<BucketRun> runs;
  for (size_t i = 0; i < bucket.parameters.size(); ++i) {
    for (const ShardSpan& span : by_parameter.at(bucket.parameters[i].unsafeGetTensorImpl())) {
      if (runs.empty() || runs.back().owner != span.owner) runs.push_back({bucket.offsets[i] + span.begin, 0, span.owner, {}});
      runs.back().numel += span.numel;
      runs.back().spans.emplace_back(i, span);
    }
  }
  return runs;
}

std::vector<torch::Tensor> shard_of(const std::vector<torch::Tensor>& parameters, int ranks, int rank, int stage) {
  const torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> out;
  for (const ShardSpan& span : shard_spans(parameters, ranks)) {
    if (span.owner != rank) continue;
    torch::Tensor p = parameters[span.parameter];
    const auto flat_span = [&](const torch::Tensor& t) { return t.view({-1}).narrow(0, span.begin, span.numel); };
    torch::Tensor piece = flat_span(p.detach());
    if (stage == 1) {
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      piece.mutable_grad() = flat_span(p.grad());
    } else {
      if (stage == 3 && owns_its_storage(p)) piece = piece.clone();
      piece.mutable_grad() = torch::zeros_like(piece);
    }
    out.push_back(std::move(piece));
  }
  return out;
}

}  // namespace papaya::executor
