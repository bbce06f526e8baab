#include "executor/distributed/data_parallel.h"

#include "executor/distributed/shards.h"

namespace papaya::executor {

DataParallel::DataParallel(Collectives& collectives, const std::vector<torch::Tensor>& parameters, int64_t bucket_bytes)
    : collectives_(collectives) {
  for (GradientBucket& layout : gradient_buckets(parameters, bucket_bytes)) {
    buckets_.emplace_back();
    static_cast<GradientBucket&>(buckets_.back()) = std::move(layout);
  }
  const std::vector<ShardSpan> spans = shard_spans(parameters, collectives.world().size);
  for (Bucket& bucket : buckets_) {
    for (const BucketRun& cut : bucket_runs(bucket, parameters, spans)) {
      Run run{cut.offset, cut.numel, cut.owner, {}};
      for (const auto& [index, span] : cut.spans) {
        run.pieces.push_back(bucket.parameters[index].detach().view({-1}).narrow(0, span.begin, span.numel));
      }
      bucket.shard_runs.push_back(std::move(run));
    }
    // Held for the whole run, as PyTorch's DDP holds its buckets: what the model prices (model/parallel/sharding.h).
    bucket.flat = {torch::zeros({bucket.numel}, bucket.parameters.front().options())};
    for (size_t i = 0; i < bucket.parameters.size(); ++i) {
      torch::Tensor p = bucket.parameters[i];
      const unsigned handle =
          p.register_hook([this, &bucket, i](const torch::Tensor& gradient) { gradient_arrived(bucket, i, gradient); });
      hooks_.emplace_back(p, handle);
    }
  }
}

DataParallel::~DataParallel() {
  for (auto& [parameter, handle] : hooks_) parameter.remove_hook(handle);
}

void DataParallel::gradient_arrived(Bucket& bucket, size_t index, const torch::Tensor& gradient) {
  if (bucket.pending) {  // its buffer is on the wire: exchange .grad afterwards instead
    bucket.late = true;
    return;
  }
  if (bucket.arrived == 0) bucket.flat[0].zero_();
  bucket.flat[0].narrow(0, bucket.offsets[index], gradient.numel()).add_(gradient.detach().flatten());
  if (++bucket.arrived == bucket.expected) bucket.pending = collectives_.start_allreduce_sum(bucket.flat);
}

namespace {

// The tensors end to end into `flat`, which holds as many elements.
void flatten_into(const std::vector<torch::Tensor>& tensors, torch::Tensor& flat) {
  int64_t at = 0;
  for (const auto& t : tensors) {
    flat.narrow(0, at, t.numel()).copy_(t.flatten());
    at += t.numel();
  }
}

// `flat` copied back into `tensors`, in order.
void unflatten(const torch::Tensor& flat, std::vector<torch::Tensor>& tensors) {
  int64_t at = 0;
  for (auto& t : tensors) {
    t.copy_(flat.narrow(0, at, t.numel()).view_as(t));
    at += t.numel();
  }
}

}  // namespace

void DataParallel::broadcast_parameters() {
  for (Bucket& bucket : buckets_) {
    std::vector<Run> whole{{0, bucket.numel, 0, {}}};
    for (const auto& p : bucket.parameters) whole.front().pieces.push_back(p.detach().view({-1}));
    broadcast_runs(bucket, whole);
  }
}

void DataParallel::broadcast_runs(Bucket& bucket, std::vector<Run>& runs) {
  const torch::NoGradGuard no_grad;
  for (Run& run : runs) {
    // The bucket's buffer carries the run: nothing is allocated.
    torch::Tensor wire = bucket.flat[0].narrow(0, run.offset, run.numel);
    if (collectives_.world().rank == run.owner) flatten_into(run.pieces, wire);
    std::vector<torch::Tensor> tensors{wire};
    collectives_.broadcast(tensors, run.owner);
    unflatten(wire, run.pieces);
  }
}

void DataParallel::average_gradients() {
  const torch::NoGradGuard no_grad;
  sent_during_backward_ = 0;
  for (Bucket& bucket : buckets_) {
    sent_during_backward_ += bucket.pending && !bucket.late ? 1 : 0;
    std::vector<torch::Tensor> grads;
    for (auto& p : bucket.parameters) {
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      grads.push_back(p.grad());
    }
    if (bucket.pending) bucket.pending->wait();
    if (!bucket.pending || bucket.late) {  // the first step, or gradients that came otherwise: .grad, now
      flatten_into(grads, bucket.flat[0]);
      collectives_.allreduce_sum(bucket.flat);
    }
    unflatten(bucket.flat[0].div_(collectives_.world().size), grads);
    if (bucket.expected < 0) bucket.expected = bucket.arrived;
    bucket.arrived = 0;
    bucket.pending.reset();
    bucket.late = false;
  }
}

void DataParallel::gather_shards() {
  for (Bucket& bucket : buckets_) broadcast_runs(bucket, bucket.shard_runs);
}

namespace {

class RankSlice : public DataSource {
 public:
  RankSlice(std::unique_ptr<DataSource> source, const World& world) : source_(std::move(source)), world_(world) {}

  Batch next(int64_t batch_size) override {
    const Batch global = source_->next(batch_size * world_.size);
    const int64_t first = batch_size * world_.rank;
    const auto slice = [&](const torch::Tensor& t) { return t.defined() ? t.narrow(0, first, batch_size).clone() : t; };
    Batch batch{{}, slice(global.target), {}, {first, batch_size * world_.size}};
    for (const auto& argument : global.arguments) batch.arguments.push_back(slice(argument));
    batch.input = batch.arguments.empty() ? slice(global.input) : batch.arguments.front();  // one copy
    return batch;
  }
  std::string describe() const override {
    return source_->describe() + ", rank " + std::to_string(world_.rank) + "'s slice of " + std::to_string(world_.size);
  }
  torch::Tensor position() const override { return source_->position(); }
  void seek(const torch::Tensor& position) override { source_->seek(position); }

 private:
  std::unique_ptr<DataSource> source_;
  World world_;
};

}  // namespace

std::unique_ptr<DataSource> rank_slice(std::unique_ptr<DataSource> source, const World& world) {
  return std::make_unique<RankSlice>(std::move(source), world);
}

}  // namespace papaya::executor
