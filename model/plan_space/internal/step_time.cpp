// How long a step takes under a plan: compute per layer, the swap copies
// around it, and a data-parallel rank's exchange.
#include "model/plan_space/internal/step_time.h"

#include <algorithm>
#include <vector>

#include "model/parallel/data_parallel.h"

namespace papaya::model::plan_space {
namespace {

// One layer's part of a step.
struct LayerStep {
  double forward_s = 0, backward_s = 0;           // compute, codecs included
  double to_host_bytes = 0, from_host_bytes = 0;  // the swapped copies it stores and fetches
  double parameter_bytes = 0;                     // its weights (gathered under ZeRO-3)
  double gradient_bytes = 0;                      // of those trained: exchanged
  bool expert = false;                            // exchanged over the ranks holding it (LayerEntry::expert)
};

// The network link between data-parallel ranks: one collective at a time.
// An expert's gradients leave in buckets of their own, reduced (and its
// weights gathered) over the ranks holding it (DataParallel::expert_ranks_apart), as
// Megatron-LM's expert data-parallel group does; none where it has no other.
class Exchange {
 public:
  explicit Exchange(const DataParallel& world) : world_(world), buckets_{{0, world.ranks}, {0, world.expert_ranks_apart()}} {}
  bool active() const { return world_.active(); }
  bool gathers_layers() const { return active() && world_.zero_stage == 3; }
  // How long a step's weights take to gather (0: nobody else holds them).
  double gather_seconds(const LayerStep& step) {
    const int ranks = group(step).ranks;
    return ranks > 1 ? world_.link.gather_seconds(step.parameter_bytes, ranks) : 0;
  }
  // Weights that take `seconds` to gather, issued at `issued` (after the collectives before it): when they are there.
  double gather(double issued, double seconds) { return seconds > 0 ? run(issued, seconds) : issued; }
  // A step's gradients, ready at `ready`: buckets leave as they fill.
  void gradients(double ready, const LayerStep& step) {
    Bucket& bucket = group(step);
    bucket.bytes += step.gradient_bytes;
    if (bucket.bytes >= world_.bucket_bytes) flush(ready, bucket);
  }
  // The last buckets leave; when the link is done.
  double drain(double ready) {
    for (Bucket& bucket : buckets_) {
      if (bucket.bytes > 0) flush(ready, bucket);
    }
    return done_;
  }

 private:
  struct Bucket {
    double bytes = 0;
    int ranks = 0;
  };
  Bucket& group(const LayerStep& step) { return buckets_[step.expert ? 1 : 0]; }
  double run(double issued, double seconds) { return done_ = std::max(done_, issued) + seconds; }
  void flush(double ready, Bucket& bucket) {
    // Stages 0 and 1 allreduce a bucket; 2 and 3 reduce-scatter it, half the wire.
    if (bucket.ranks > 1) {
      run(ready, world_.zero_stage >= 2 ? world_.link.gather_seconds(bucket.bytes, bucket.ranks)
                                        : world_.link.seconds(bucket.bytes, bucket.ranks));
    }
    bucket.bytes = 0;
  }
  const DataParallel& world_;
  double done_ = 0;
  Bucket buckets_[2];  // every other layer's, the experts'
};

// The layers' steps in the order a step runs them (Index::runs), forward or
// backward: a run standing for alike others that many times in turn, each
// time with its share of every figure (shared_out), so that what overlaps
// them (swap copies, ZeRO-3's gathers, gradient buckets) sees each. Walked
// in place: DeepSeek-V3's stage of a mixture of 256 experts a block is tens
// of thousands of steps, and a search prices thousands of stages.
class InTurn {
 public:
  InTurn(const std::vector<LayerRun>& runs, bool backward) : runs_(runs), backward_(backward), run_(backward ? runs.size() : 0) {
    begin_run();
  }
  // The layer of the next step; false once all are walked.
  bool next(size_t& layer) {
    while (true) {
      if (run_ == (backward_ ? 0 : runs_.size()) && !in_run_) return false;
      if (in_run_) {
        const LayerRun& run = runs_[backward_ ? run_ - 1 : run_];
        if (layer_ != (backward_ ? run.first : run.end)) {
          layer = backward_ ? --layer_ : layer_++;
          return true;
        }
        if (++copy_ < run.repeats) {
          layer_ = backward_ ? run.end : run.first;
          continue;
        }
        in_run_ = false;
        backward_ ? --run_ : ++run_;
      }
      begin_run();
    }
  }

 private:
  void begin_run() {
    if (run_ == (backward_ ? 0 : runs_.size())) return;
    const LayerRun& run = runs_[backward_ ? run_ - 1 : run_];
    in_run_ = true, copy_ = 0, layer_ = backward_ ? run.end : run.first;
  }
  const std::vector<LayerRun>& runs_;
  bool backward_;
  size_t run_, layer_ = 0;
  int copy_ = 0;
  bool in_run_ = false;
};

// Each layer's step as one time of its run: every figure divided by the
// run's repeats, once here rather than at every time the walk visits it.
void shared_out(std::vector<LayerStep>& layers, const std::vector<LayerRun>& runs) {
  for (const LayerRun& run : runs) {
    if (run.repeats == 1) continue;
    for (size_t j = run.first; j < run.end; ++j) {
      LayerStep& one = layers[j];
      for (double* x : {&one.forward_s, &one.backward_s, &one.to_host_bytes, &one.from_host_bytes, &one.parameter_bytes,
                        &one.gradient_bytes}) {
        *x /= run.repeats;
      }
    }
  }
}

// One timeline of a step: compute on its stream, swap copies on one link
// per direction. A layer's copies to the host must be done before the layer
// two later starts its forward, and a layer's copies back are issued when
// the layer after it starts its backward and must be done before its own
// starts; a layer starts no sooner than its weights are there.
class Timeline {
 public:
  // The j-th forward step starts (its weights there at `weights`): when.
  double start_forward(size_t j, double weights) {
    if (j >= 2) clock_ = std::max(clock_, copied_[0]);
    return clock_ = std::max(clock_, weights);
  }
  void end_forward(const LayerStep& step, const Target& target) {
    clock_ += step.forward_s;
    if (step.to_host_bytes > 0) link_ = std::max(link_, clock_) + step.to_host_bytes / target.d2h_bytes_per_s;
    copied_[0] = copied_[1], copied_[1] = link_;
  }
  // Backward starts once forward's copies are done.
  void turn() { next_started_ = link_ = clock_ = std::max(clock_, link_); }
  // A backward step starts (its weights there at `weights`): when.
  double start_backward(const LayerStep& step, const Target& target, double weights) {
    if (step.from_host_bytes > 0) {
      link_ = std::max(link_, next_started_) + step.from_host_bytes / target.h2d_bytes_per_s;
      clock_ = std::max(clock_, link_);
    }
    return next_started_ = clock_ = std::max(clock_, weights);
  }
  double end_backward(const LayerStep& step) { return clock_ += step.backward_s; }
  double now() const { return clock_; }

 private:
  double clock_ = 0, link_ = 0;
  double copied_[2] = {0, 0};  // when the copies of the two forward steps before this one were done: [0] the one two before
  double next_started_ = 0;    // when the backward of the step after this one started
};

// The step's forward and backward with the parts of swapping and of the
// exchange that do not hide behind compute (Timeline's). Gradients leave in
// buckets once backward has made them, on the network link; under ZeRO-3 a
// layer's parameters are gathered there too, issued when the layer before
// it starts (forward and backward alike).
struct Overlapped {
  double computed = 0;  // when the last layer's backward ends
  double done = 0;      // and when the exchange's last bucket is through too
  double alone = 0;     // when it would end with nothing gathered (asked for: 0 otherwise)
};
// `alone_too`: the same walk without ZeRO-3's gathers as well, in the same
// pass over the layers (a stage's is tens of thousands of steps).
Overlapped overlapped_seconds(const Target& target, const DataParallel& world, const std::vector<LayerStep>& layers,
                              const std::vector<LayerRun>& runs, bool alone_too) {
  Exchange exchange(world);
  // Under ZeRO-3, how long each layer's weights take to gather: one time of
  // a run's as long as any other's.
  std::vector<double> gather_s(exchange.gathers_layers() ? layers.size() : 0, 0.0);
  for (size_t j = 0; j < gather_s.size(); ++j) {
    if (layers[j].parameter_bytes > 0) gather_s[j] = exchange.gather_seconds(layers[j]);
  }
  const auto gathered = [&](size_t layer, double issued) {
    return gather_s.empty() || layers[layer].parameter_bytes <= 0 ? 0.0 : exchange.gather(issued, gather_s[layer]);
  };
  Timeline timeline, without_gathers;
  InTurn forward(runs, false);
  size_t next = 0;  // the layer of the step after this one
  bool has_next = forward.next(next);
  double parameters_ready = has_next ? gathered(next, 0) : 0;
  for (size_t j = 0; has_next; ++j) {
    const LayerStep& step = layers[next];
    has_next = forward.next(next);
    const double started = timeline.start_forward(j, parameters_ready);
    if (has_next) parameters_ready = gathered(next, started);
    timeline.end_forward(step, target);
    if (alone_too) {
      without_gathers.start_forward(j, 0);
      without_gathers.end_forward(step, target);
    }
  }
  timeline.turn(), without_gathers.turn();
  InTurn backward(runs, true);
  has_next = backward.next(next);
  parameters_ready = has_next ? gathered(next, timeline.now()) : 0;
  while (has_next) {
    const LayerStep& step = layers[next];
    has_next = backward.next(next);
    const double started = timeline.start_backward(step, target, parameters_ready);
    if (has_next) parameters_ready = gathered(next, started);
    const double ended = timeline.end_backward(step);
    if (exchange.active()) exchange.gradients(ended, step);
    if (alone_too) {
      without_gathers.start_backward(step, target, 0);
      without_gathers.end_backward(step);
    }
  }
  const double clock = timeline.now();
  return {clock, exchange.active() ? std::max(clock, exchange.drain(clock)) : clock, alone_too ? without_gathers.now() : 0};
}

}  // namespace

double step_seconds(const AtBatch& at, const Held& h, double* passes) {
  const Index& ix = *at.index;
  std::vector<LayerStep> layers;
  layers.reserve(at.layers.size());
  for (size_t j = 0; j < at.layers.size(); ++j) {
    const LayerFit& layer = ix.model->layers[j];
    layers.push_back({at.layers[j].forward_s, at.layers[j].backward_s, 0, 0, static_cast<double>(layer.parameter_bytes),
                      static_cast<double>(layer.trainable_bytes()), at.world->expert[j]});
  }
  const auto step = [&](int layer) -> LayerStep& { return layers[static_cast<size_t>(layer)]; };
  for (const StorageHeld& held : h.storages) {
    for (const Copy& c : held.copies) {
      step(c.created).forward_s += pack_seconds(at, c);
      for (const Use& u : c.uses) {
        step(u.charged_to).backward_s += use_seconds(at, c.strategy, u.charged_to, u.raw_bytes);
      }
      if (!c.strategy.swap) continue;
      step(c.created).to_host_bytes += c.host_bytes;
      step(c.fetched_by).from_host_bytes += c.host_bytes;
    }
  }
  for (size_t s = 0; s < ix.segments.size(); ++s) {
    if (h.recomputed[s]) step(ix.segments[s].last_layer).backward_s += at.segments[s].recompute_s;
  }
  for (size_t head = 0; head < ix.lm_heads.size(); ++head) {
    const int layer = ix.lm_heads[head].layer;
    if (h.lm_heads_recomputed[head]) step(layer).backward_s += at.layer(layer).forward_s;
  }
  for (size_t c = 0; c < ix.cores.size(); ++c) {
    if (h.cores_recomputed[c]) step(ix.cores[c].context).backward_s += at.core_recompute_seconds(static_cast<int>(c));
  }
  shared_out(layers, ix.runs);
  const DataParallel& world = at.data_parallel();
  // The passes alone: but for ZeRO-3's gathers the exchange never holds a layer back, and they end where its backward does.
  const bool gathers = Exchange(world).gathers_layers();
  const Overlapped overlapped = overlapped_seconds(at.target(), world, layers, ix.runs, passes && gathers);
  if (passes) *passes = (gathers ? overlapped.alone : overlapped.computed) + at.rest_s;
  return overlapped.done + at.optimizer_s + at.parameter_gather_s + at.rest_s;
}

}  // namespace papaya::model::plan_space
