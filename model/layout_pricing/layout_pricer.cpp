#include "model/layout_pricing/layout_pricer.h"

#include <unistd.h>

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <tuple>

#include "model/alike_experts.h"
#include "model/catalog/hardware.h"
#include "model/catalog/target.h"
#include "model/error.h"
#include "model/network_layout.h"
#include "model/parallel/data_parallel.h"
#include "model/parallel/engines.h"
#include "model/parallel/expert_groups.h"
#include "model/parallel/sharding.h"
#include "model/parallel/tensor_split.h"
#include "model/plan.h"
#include "model/plan_space/plan_space.h"
#include "model/plan_space/predict.h"

namespace papaya::model {
// The links each group of a layout exchanges over: within a node where the
// group's GPUs (consecutive ranks, t fastest, then c, then d) fit in one.
struct GroupLinks {
  const LinkFit *tensor, *context, *expert, *data, *pipeline;
  std::string data_name;
};

static GroupLinks group_links(const ParallelLayout& l, const ClusterLinks& links) {
  const auto over = [&](int span) { return span <= links.gpus_per_node ? &links.intra : &links.inter; };
  return {over(l.tensor),
          over(l.tensor * l.context),
          over(l.tensor * l.expert),
          over(l.tensor * l.context * l.data),
          over(l.gpus()),
          l.tensor * l.context * l.data <= links.gpus_per_node ? links.intra_name : links.inter_name};
}

namespace {

// The point a stage's backward starts at: all its forward holds for backward is held there.
size_t first_backward_point(const PlanSpace& space) {
  const auto& points = space.points();
  for (size_t i = 0; i < points.size(); ++i) {
    if (points[i].phase == Phase::backward || points[i].phase == Phase::backward_gap) return i;
  }
  return points.size() - 1;
}

// Whether the stage's first layer saves its input, the activation the
// stage received, as it is (raw) under `assignment`: itself, or as the input
// of a recomputed segment it begins.
bool saves_its_input_raw(const PlanSpace& space, const Assignment& assignment, const LayerModel& stage) {
  const std::string input_key = stage.layers.front().path + ":input";
  const auto& slots = space.slots();
  for (size_t i = 0; i < slots.size() && slots[i].layer == 0; ++i) {  // the first layer's slots come first
    if (slots[i].key != input_key) continue;
    const auto& segments = space.segments();
    for (size_t s = 0; s < segments.size(); ++s) {
      if (assignment.segments[s].recompute && segments[s].first_layer <= slots[i].layer &&
          slots[i].layer <= segments[s].last_layer) {
        return segments[s].input_storage == slots[i].storage && assignment.segments[s].input.is_keep();
      }
    }
    return assignment.slots[i].is_keep();
  }
  return false;
}

// What one more micro-batch in flight holds, as Megatron-LM's 1F1B (and
// papaya's) holds it: the tensors its layers saved for backward (the part
// that grows with the batch: one micro-batch's more at twice the
// micro-batch) and, after the first stage, the activation it received,
// held from its forward to the end of its backward (its input's gradient is
// sent back from it) where its first layer does not save it as it is. Not
// the stage's output, whose values go once sent, nor its layers'
// half-precision weight copies, held once whatever it runs.
struct InFlightBytes {
  double received = 0, activations = 0;
};
// `saved`, `saved_at_twice`: what the stage saved at its first backward
// point at its batch and at twice it (PlanSpace::saved_bytes).
InFlightBytes in_flight_bytes(const PlanSpace& space, const Assignment& assignment, double saved, double saved_at_twice,
                              const LayerModel& stage, const StageSpan& span, double input_per_sample) {
  InFlightBytes out;
  if (!span.first && !saves_its_input_raw(space, assignment, stage)) {
    out.received = static_cast<double>(space.batch()) * input_per_sample;
  }
  out.activations = saved_at_twice - saved + out.received;
  return out;
}

struct StageComm {
  // `pipeline`: a stage of one chunk's sends, its output forward and its
  // input's gradient back (none past the first's or the last's end);
  // `pipeline_send` one of them, which each more chunk sends twice more.
  double tensor = 0, pipeline = 0, pipeline_send = 0, context = 0, expert = 0;
  double context_buffer_bytes = 0;
};

// What a stage's layer takes part in, from its path and kind alone: the
// same under every layout and plan, so found once a stage (a mixture of
// experts' stage has tens of thousands of layers, a layout search prices
// hundreds of plans on it).
struct LayerCommFacts {
  enum class Collective { none, row_parallel, mixture_output, embedding };
  Collective collective = Collective::none;
  double whole_output = 0;  // its output a sample, before any split
  int segment = -1;         // in the stage's segments (LayerModel::segments), -1: none
  bool normalizes = false;  // a norm: its output is what a mixture's output all-reduce carries
  bool dispatches = false;  // an expert's first projection: its input dispatched and combined
  bool attention = false;   // a layer of an attention core
  bool in_block = false;
};

std::vector<LayerCommFacts> comm_facts(const LayerModel& stage, const std::map<std::string, double>& whole_output) {
  std::map<std::string, int> segments;
  for (const SegmentFit& s : stage.segments) segments.emplace(s.path, static_cast<int>(segments.size()));
  std::vector<LayerCommFacts> out;
  for (const LayerFit& layer : stage.layers) {
    LayerCommFacts f;
    const std::string name = layer_role(layer.path);
    f.whole_output = whole_output.at(layer.path);
    if (!layer.segment.empty()) f.segment = segments.at(layer.segment);
    f.normalizes = layer.kind == LayerKind::layernorm || layer.kind == LayerKind::rmsnorm;
    using C = LayerCommFacts::Collective;
    if (!in_mixture_of_experts(layer.path) && row_parallel(layer.path)) {
      f.collective = C::row_parallel;
    } else if (name == "router") {
      f.collective = C::mixture_output;
    } else if (layer.kind == LayerKind::embedding) {
      f.collective = C::embedding;
    }
    f.dispatches = in_expert(layer.path) && name == "fc1";
    f.attention = layer.kind == LayerKind::attention_scores || layer.kind == LayerKind::softmax ||
                  layer.kind == LayerKind::attention_context || layer.kind == LayerKind::fused_attention;
    f.in_block = block_of_path(layer.path) >= 0;
    out.push_back(f);
  }
  return out;
}

// Of the layers `held` of `stage` (empty: all of them).
StageComm stage_comm(const LayerModel& stage, const std::vector<LayerCommFacts>& facts, const Target& target, const Plan& plan,
                     const ParallelLayout& l, const GroupLinks& links, const StageSpan& span,
                     const std::vector<bool>& held = {}) {
  StageComm out;
  const double mb = l.micro_batch;
  const auto tensor_collectives = [&](double bytes, int count) {
    if (l.tensor < 2) return 0.0;
    // An all-reduce, or under sequence parallelism its reduce-scatter and all-gather halves.
    const double one = l.sequence ? 2 * links.tensor->gather_seconds(bytes, l.tensor) : links.tensor->seconds(bytes, l.tensor);
    return count * one;
  };
  std::vector<bool> recomputed_segment;
  for (const SegmentFit& s : stage.segments) recomputed_segment.push_back(plan.segment(s.path).recompute);
  double attention_s = 0, kv_bytes = 0, normalized = 0;
  using C = LayerCommFacts::Collective;
  for (size_t j = 0; j < stage.layers.size(); ++j) {
    if (!held.empty() && !held[j]) continue;
    const LayerFit& layer = stage.layers[j];
    const LayerCommFacts& f = facts[j];
    const double stream = mb * f.whole_output / l.context;  // the whole stream of the rank's tokens
    const bool recomputed = f.segment >= 0 && recomputed_segment[static_cast<size_t>(f.segment)];
    if (f.normalizes) normalized = f.whole_output;
    if (f.collective == C::row_parallel) {
      out.tensor += tensor_collectives(stream, recomputed ? 3 : 2);  // forward's, backward's, a recompute's
    } else if (f.collective == C::mixture_output) {
      // A mixture of experts' output (its experts' and a shared expert's) is
      // all-reduced once: the stream its norm made.
      out.tensor += tensor_collectives(mb * normalized / l.context, recomputed ? 3 : 2);
    } else if (f.collective == C::embedding) {
      out.tensor += tensor_collectives(stream, 1);
    }
    if (f.dispatches && l.expert > 1) {
      for (const auto& t : layer.saved) {
        // Dispatch and combine, in forward and in backward, of each expert it stands for.
        const double one = t.storage_bytes_per_sample / layer.repeats;
        if (t.slot == "input") out.expert += 4 * layer.repeats * links.expert->gather_seconds(mb * one, l.expert);
      }
    }
    if (f.attention) {
      attention_s += target.forward_seconds[j].at(mb) + target.backward_seconds[j].at(mb);
      for (const auto& t : layer.saved) {
        if (t.slot == "k" || t.slot == "v") kv_bytes += mb * t.storage_bytes_per_sample;
      }
    }
  }
  if (l.context > 1) {
    // Each rank's k and v go around the ring: c - 1 sends in forward, twice that in backward (and their gradients).
    const double ring = 3.0 * (l.context - 1) * links.context->send_seconds(kv_bytes);
    out.context = std::max(0.0, ring - attention_s);
    const int blocks = std::max(1, span.end_block - span.first_block);
    out.context_buffer_bytes = 2 * kv_bytes / blocks;  // the blocks in flight, one layer's
  }
  if (l.pipeline > 1) {
    double boundary = 0;
    for (size_t j = 0; j < facts.size(); ++j) {
      if (facts[j].in_block && (held.empty() || held[j])) boundary = facts[j].whole_output;
    }
    const double bytes = mb * boundary / l.context / (l.sequence ? l.tensor : 1);
    out.pipeline_send = links.pipeline->send_seconds(bytes);
    out.pipeline = ((span.last ? 0 : 1) + (span.first ? 0 : 1)) * out.pipeline_send;
  }
  return out;
}

// The micro-batches' times an iteration lasts: its own and the pipeline's fill and drain.
double micro_batch_turns(const ParallelLayout& l) { return l.micro_batches + (l.pipeline - 1.0) / l.virtual_stages; }

std::string rank_key(const ParallelLayout& l) {
  return std::to_string(l.tensor) + (l.sequence ? "s" : "") + "/" + std::to_string(l.context) + "/" + std::to_string(l.expert);
}

}  // namespace

// What one stage's evaluation at a micro-batch under a plan gives, for its
// data-parallel ranks and ZeRO stage.
struct LayoutPricer::StagePrice {
  double peak = 0, activations = 0, micro_batch_seconds = 0, exchange = 0, optimizer = 0;
  RankStatic held;  // weights, gradients and optimizer state on the GPU
  StageComm comm;
  std::string peak_at;
};

struct LayoutPricer::Stage {
  LayerModel model;
  StateBytes state;  // of `model`
  Target alone;
  double weight_copies = 0;           // its layers' half-precision weight copies
  double input_bytes_per_sample = 0;  // the activation it receives (none on the first stage)
  std::vector<LayerCommFacts> comm;   // one a layer
  // By data-parallel ranks and ZeRO stage: the space at batch 1, and at the
  // batches priced last (the search prices every plan and ZeRO stage of a
  // micro-batch in turn; a space at a batch of many layers is megabytes).
  std::map<std::string, PlanSpace> spaces;
  std::map<std::string, std::deque<PlanSpace>> recent;
  std::map<std::string, StagePrice> prices;
  // Each whole-network plan by name, on its layout and as its spaces' decisions (the same in each).
  std::map<std::string, std::pair<Plan, Assignment>> plans;
  std::optional<NetworkLayout> layout;  // the model's, once a plan is named on it
  uint64_t last_used = 0;               // the pricer's count of stage lookups when it was last looked up
};

// One rank of a tensor, context and expert split, shared by the workers:
// its model, split by whichever worker asks first, and, once a time floor
// asks, its layers on the target for the floors of its stages without
// making them (a layer's seconds there are its own alone, catalog_target's
// and profiled_target's, the same in every stage).
struct LayoutPricer::Rank {
  std::mutex mutex;  // held while a worker makes what the others would wait for
  std::optional<LayerModel> model;
  std::optional<Target> target;               // of the rank's model
  std::vector<LayerCommFacts> comm;           // one a layer
  std::map<int, std::vector<double>> passes;  // by micro-batch: each layer's forward + backward
};

// What one worker keeps (LayoutPricer's comment).
struct LayoutPricer::Kept {
  std::map<std::string, std::unique_ptr<Stage>> stages;
  // By stage key, each stage's state bytes, kept when the stage is let go:
  // the static floor of a stage seen before (at another count of GPUs) needs no stage.
  std::map<std::string, StateBytes> states;
  // By stage key and what else it depends on (the micro-batch, the chunks,
  // the stages' link), a micro-batch's time floor on the stage, made from
  // its rank's layers (rank_passes): most layouts' stages are never priced.
  std::map<std::string, double> floors;
  uint64_t stage_lookups = 0;
  size_t stages_seen = 0;  // how many stages make_room last found
};

namespace {

// Whether this machine has less than a quarter of its memory free.
bool memory_is_short() {
  const long total = sysconf(_SC_PHYS_PAGES), free = sysconf(_SC_AVPHYS_PAGES);
  return total > 0 && free >= 0 && free < total / 4;
}

}  // namespace

LayoutPricer::Kept& LayoutPricer::kept(int worker) const {
  const std::lock_guard<std::mutex> lock(workers_mutex_);
  const auto index = static_cast<size_t>(std::max(0, worker));
  while (workers_.size() <= index) workers_.push_back(std::make_unique<Kept>());
  return *workers_[index];
}

size_t LayoutPricer::stages_held(int worker) const { return kept(worker).stages.size(); }

void LayoutPricer::make_room(Kept& k) const {
  // Memory grows by new stages: the machine's free memory (read from the
  // kernel) is looked at only when some were made since the last look.
  if (k.stages.size() < 2 || k.stages.size() == k.stages_seen) return;
  k.stages_seen = k.stages.size();
  const bool short_of_memory = k.stages.size() >= 4 && memory_is_short();
  if (k.stages.size() <= request_.stages_kept && !short_of_memory) return;
  std::vector<uint64_t> uses;
  for (const auto& [key, st] : k.stages) uses.push_back(st->last_used);
  std::nth_element(uses.begin(), uses.begin() + static_cast<std::ptrdiff_t>(uses.size() / 2), uses.end());
  const uint64_t median = uses[uses.size() / 2];
  for (auto it = k.stages.begin(); it != k.stages.end();) {
    it = it->second->last_used < median ? k.stages.erase(it) : std::next(it);
  }
  // A split model is one of a few a search makes (one a tensor, context and
  // expert split), each made again after it is let go (DeepSeek-V3's a
  // thousand times for its fewest H100s): let go only where memory runs short.
  if (short_of_memory) {
    const std::lock_guard<std::mutex> lock(ranks_mutex_);
    ranks_.clear();  // a worker pricing with one holds it still
  }
  k.stages_seen = k.stages.size();
}

LayoutPricer::LayoutPricer(const LayerModel& whole, LayoutRequest request)
    : whole_(request.alike_experts_once ? collapse_alike_experts(whole) : whole),
      request_(std::move(request)),
      holding_(engine_limits(request_.engine).holding),
      shape_(transformer_shape(whole, whole.network)) {
  if (!request_.hardware.empty()) {
    hardware_ = load_hardware(request_.hardware);
    peak_flops_ = hardware_->peak_for(whole.precision);
  }
  host_link_ = target_of(whole_).has_host_link();
  // A block's layers, weights, FLOPs and saved bytes: alike blocks' are equal.
  std::vector<std::tuple<size_t, double, double, double>> blocks(static_cast<size_t>(shape_.blocks));
  for (const LayerFit& l : whole_.layers) {
    model_flops_ += l.forward_flops_per_sample;
    whole_output_[l.path] = l.output_bytes_per_sample;
    const int b = block_of_path(l.path);
    if (b < 0 || b >= shape_.blocks) continue;
    auto& [layers, weights, flops, saved] = blocks[static_cast<size_t>(b)];
    ++layers, weights += static_cast<double>(l.parameter_bytes), flops += l.forward_flops_per_sample;
    for (const auto& t : l.saved) saved += t.storage_bytes_per_sample;
  }
  std::map<std::tuple<size_t, double, double, double>, int> kinds;
  for (const auto& b : blocks) block_kinds_.push_back(kinds.emplace(b, static_cast<int>(kinds.size())).first->second);
}

LayoutPricer::~LayoutPricer() = default;

Target LayoutPricer::target_of(const LayerModel& model) const {
  return make_target(model, hardware_, request_.compute_efficiency, request_.engine);
}

DataParallel LayoutPricer::world_of(const ParallelLayout& layout, const GroupLinks& links) const {
  DataParallel world = data_parallel_of(layout, links.data_name, *links.data, holding_);
  // One bucket of every gradient: it leaves when backward is done.
  if (!request_.overlap_grad_reduce) world.bucket_bytes = std::numeric_limits<double>::infinity();
  return world;
}

std::string LayoutPricer::stage_key(const ParallelLayout& layout, const StageSpan& span) const {
  std::string key = rank_key(layout) + "/" + (span.first ? "f" : "") + (span.last ? "l" : "");
  // The kinds in runs ("/0x3/1x58"): short keys, as maps compare them at every lookup.
  for (int b = span.first_block; b < span.end_block;) {
    const int kind = block_kinds_[static_cast<size_t>(b)];
    int run = 1;
    while (b + run < span.end_block && block_kinds_[static_cast<size_t>(b + run)] == kind) ++run;
    key += "/" + std::to_string(kind) + "x" + std::to_string(run);
    b += run;
  }
  return key;
}

std::shared_ptr<LayoutPricer::Rank> LayoutPricer::rank(const ParallelLayout& layout) const {
  std::shared_ptr<Rank> found;
  {
    const std::lock_guard<std::mutex> lock(ranks_mutex_);
    std::shared_ptr<Rank>& held = ranks_[rank_key(layout)];
    if (!held) held = std::make_shared<Rank>();
    found = held;
  }
  const std::lock_guard<std::mutex> lock(found->mutex);
  if (!found->model) found->model = split_across_ranks(whole_, shape_, layout);
  return found;
}

const std::vector<double>& LayoutPricer::rank_passes(Rank& r, int micro_batch) const {
  const std::lock_guard<std::mutex> lock(r.mutex);
  if (!r.target) {
    r.target = target_of(*r.model);
    r.comm = comm_facts(*r.model, whole_output_);
  }
  std::vector<double>& passes = r.passes[micro_batch];
  if (passes.empty()) {
    // What a plan space's step adds up before anything overlaps it (AtBatch's layer times).
    const auto b = static_cast<double>(micro_batch);
    for (size_t j = 0; j < r.model->layers.size(); ++j) {
      passes.push_back(r.target->forward_seconds[j].at(b) + r.target->backward_seconds[j].at(b));
    }
  }
  return passes;
}

const StateBytes& LayoutPricer::state_of(Kept& k, const ParallelLayout& layout, const StageSpan& span) const {
  // Counted from the rank's layers, no stage made: most layouts' stages are never priced.
  const std::string key = stage_key(layout, span);
  auto state = k.states.find(key);
  if (state == k.states.end()) state = k.states.emplace(key, stage_state(*rank(layout)->model, span)).first;
  return state->second;
}

LayoutPricer::Stage& LayoutPricer::stage(Kept& k, const ParallelLayout& layout, const StageSpan& span) const {
  const std::string held_as = stage_key(layout, span);
  auto found = k.stages.find(held_as);
  if (found != k.stages.end()) {
    found->second->last_used = ++k.stage_lookups;
    return *found->second;
  }
  const std::shared_ptr<const Rank> of_rank = rank(layout);
  const LayerModel& ranked = *of_rank->model;
  auto stage = std::make_unique<Stage>();
  stage->model = stage_model(ranked, span);
  stage->state = state_of(k, layout, span);
  stage->alone = target_of(stage->model);
  stage->alone.data_parallel.holding = holding_;
  stage->comm = comm_facts(stage->model, whole_output_);
  if (!computes_with_held_weights(stage->model, stage->alone.data_parallel)) {
    for (const LayerFit& layer : stage->model.layers) stage->weight_copies += static_cast<double>(layer.parameter_copy_bytes);
  }
  for (size_t j = 1; j < ranked.layers.size(); ++j) {
    if (ranked.layers[j].path == stage->model.layers.front().path)
      stage->input_bytes_per_sample = ranked.layers[j - 1].output_bytes_per_sample;
  }
  stage->last_used = ++k.stage_lookups;
  return *k.stages.emplace(held_as, std::move(stage)).first->second;
}

PlanSpace LayoutPricer::space(Stage& st, const ParallelLayout& layout, const GroupLinks& links, int64_t batch) const {
  const int data_ranks = layout.data * layout.context, zero_stage = layout.zero_stage;
  const std::string key = std::to_string(data_ranks) + "/" + std::to_string(zero_stage) + "/" + links.data_name;
  auto base = st.spaces.find(key);
  if (base == st.spaces.end()) {
    const DataParallel world = data_ranks > 1 ? world_of(layout, links) : st.alone.data_parallel;
    // The stage is indexed once; its other worlds share that index.
    if (st.spaces.empty()) {
      Target target = st.alone;
      set_data_parallel(target, world);
      base = st.spaces.emplace(key, PlanSpace(st.model, target, 1)).first;
    } else {
      base = st.spaces.emplace(key, st.spaces.begin()->second.with_data_parallel(world)).first;
    }
  }
  if (batch == 1) return base->second;
  std::deque<PlanSpace>& recent = st.recent[key];
  for (const PlanSpace& s : recent) {
    if (s.batch() == batch) return s;
  }
  constexpr size_t kept = 4;
  if (recent.size() == kept) recent.pop_front();
  recent.push_back(base->second.at_batch(batch));
  return recent.back();
}

const LayoutPricer::StagePrice& LayoutPricer::price(Stage& st, const ParallelLayout& layout, const std::string& plan_name,
                                                    const GroupLinks& links, const StageSpan& span) const {
  const int data_ranks = layout.data * layout.context;  // gradients are reduced over both
  const std::string key = std::to_string(layout.micro_batch) + "/" + plan_name + "/" + std::to_string(data_ranks) + "/" +
                          std::to_string(layout.zero_stage) + "/" + std::to_string(layout.micro_batches) + "/" + links.data_name;
  auto found = st.prices.find(key);
  if (found != st.prices.end()) return found->second;
  const PlanSpace with_data = space(st, layout, links, layout.micro_batch);
  auto planned = st.plans.find(plan_name);
  if (planned == st.plans.end()) {
    if (!st.layout) st.layout = st.model.layout();
    Plan expanded = expand_plan_name(plan_name, *st.layout);
    Assignment decisions = with_data.assignment(expanded);
    planned = st.plans.emplace(plan_name, std::make_pair(std::move(expanded), std::move(decisions))).first;
  }
  const auto& [plan, assignment] = planned->second;
  const size_t backward_from = first_backward_point(with_data);
  const auto [estimate, saved] = with_data.evaluate_with_saved_bytes(assignment, backward_from);
  const double saved_at_twice = space(st, layout, links, 2 * layout.micro_batch).saved_bytes(assignment, backward_from);
  StagePrice p;
  p.comm = stage_comm(st.model, st.comm, st.alone, plan, layout, links, span);
  const InFlightBytes in_flight =
      in_flight_bytes(with_data, assignment, saved, saved_at_twice, st.model, span, st.input_bytes_per_sample);
  p.peak = estimate.peak_bytes + p.comm.context_buffer_bytes + (estimate.peak_in_optimizer_step ? 0 : in_flight.received);
  p.peak_at = peak_location(st.model, estimate);
  p.activations = in_flight.activations;
  const DataParallel world = world_of(layout, links);
  p.held = rank_static(st.state, world);
  const double optimizer_whole = st.alone.optimizer_seconds.at(layout.micro_batch);
  p.optimizer = layout.zero_stage >= 1 ? optimizer_whole / optimizer_ranks(st.state, world) : optimizer_whole;
  p.micro_batch_seconds = estimate.passes_seconds + p.comm.tensor + p.comm.pipeline + p.comm.context + p.comm.expert;
  // What the exchange (and ZeRO's gathers) leave exposed; none without data-parallel ranks.
  const double exchange = data_ranks > 1 ? std::max(0.0, estimate.seconds - estimate.passes_seconds - p.optimizer) : 0.0;
  p.exchange = layout.zero_stage == 3 ? exchange * layout.micro_batches : exchange;  // gathers every micro-batch
  return st.prices.emplace(key, std::move(p)).first->second;
}

double LayoutPricer::static_floor(const ParallelLayout& layout, int worker) const {
  Kept& k = kept(worker);
  make_room(k);
  double floor = 0;
  const GroupLinks links = group_links(layout, request_.links);
  const DataParallel world = world_of(layout, links);
  for (const StageSpan& span : pipeline_stages(shape_.blocks, layout.pipeline)) {
    RankStatic held = rank_static(state_of(k, layout, span), world);
    if (layout.offload_optimizer) held.optimizer = 0;
    floor = std::max(floor, held.total());
  }
  return floor;
}

double LayoutPricer::time_floor_seconds(const ParallelLayout& layout, int worker) const {
  Kept& k = kept(worker);
  make_room(k);
  const GroupLinks links = group_links(layout, request_.links);
  const std::string of_layout = "/" + std::to_string(layout.micro_batch) + "/" + std::to_string(layout.virtual_stages) + "/" +
                                (links.pipeline == &request_.links.intra ? "i" : "x");
  double slowest = 0;
  for (const StageSpan& span : pipeline_stages(shape_.blocks, layout.pipeline)) {
    const auto [floor, added] = k.floors.emplace(stage_key(layout, span) + of_layout, 0.0);
    if (added) {
      // The stage's figures from its rank's layers (as stage() would make them, without making it).
      const std::shared_ptr<Rank> of_rank = rank(layout);
      const std::vector<double>& passes = rank_passes(*of_rank, layout.micro_batch);
      const LayerModel& ranked = *of_rank->model;
      const Target& target = *of_rank->target;
      const std::vector<bool> held = stage_layers(ranked, span);
      double compute = target.rest_of(stage_rest_seconds(ranked, held), held).at(static_cast<double>(layout.micro_batch));
      for (size_t j = 0; j < ranked.layers.size(); ++j) {
        if (held[j]) compute += passes[j];
      }
      // Communication as keep has it: a plan only adds to it (a recompute's collectives).
      const StageComm comm = stage_comm(ranked, of_rank->comm, target, Plan{}, layout, links, span, held);
      const double chunk_sends = 2.0 * (layout.virtual_stages - 1) * comm.pipeline_send;
      floor->second = compute + comm.tensor + comm.pipeline + comm.context + comm.expert + chunk_sends;
    }
    slowest = std::max(slowest, floor->second);
  }
  return micro_batch_turns(layout) * slowest;
}

LayoutEstimate LayoutPricer::estimate(const ParallelLayout& layout, const std::string& plan_name, int worker) const {
  check_layout(layout, shape_);
  Kept& k = kept(worker);
  make_room(k);
  const GroupLinks links = group_links(layout, request_.links);
  LayoutEstimate out;
  out.layout = layout;
  out.plan = plan_name;
  out.overlap_grad_reduce = request_.overlap_grad_reduce;
  double slowest = 0;
  const std::vector<StageSpan> spans = pipeline_stages(shape_.blocks, layout.pipeline);
  for (size_t index = 0; index < spans.size(); ++index) {
    const StageSpan& span = spans[index];
    Stage& st = stage(k, layout, span);
    if (layout.offload_optimizer && !st.alone.has_host_link()) {
      throw InputError(st.alone.name + " has no host link: the optimizer cannot be offloaded");
    }
    const StagePrice& p = price(st, layout, plan_name, links, span);
    StageEstimate s;
    s.span = span;
    s.activation_bytes = p.activations;
    // Under ZeRO-3 each layer's weights are gathered again for backward: no copies held (as FSDP frees them).
    s.weight_copies_bytes = layout.zero_stage == 3 && layout.data * layout.context > 1 ? 0 : st.weight_copies;
    s.in_flight = in_flight_micro_batches(static_cast<int>(index), layout);
    // Offloaded, the optimizer's state is on the host all step: every point holds that much less.
    const double offloaded = layout.offload_optimizer ? p.held.optimizer : 0;
    s.peak_bytes = p.peak - offloaded + (s.in_flight - 1) * p.activations;
    s.peak_at = p.peak_at;
    s.static_bytes = p.held.total() - offloaded;
    s.optimizer_seconds = p.optimizer;
    // Interleaved, a micro-batch crosses into and out of each of a stage's v chunks
    // (Narayanan et al. 2021: v times the communication).
    const double chunk_sends = 2.0 * (layout.virtual_stages - 1) * p.comm.pipeline_send;
    s.tensor_comm_seconds = p.comm.tensor, s.pipeline_comm_seconds = p.comm.pipeline + chunk_sends;
    s.context_comm_seconds = p.comm.context, s.expert_comm_seconds = p.comm.expert;
    s.micro_batch_seconds = p.micro_batch_seconds + chunk_sends;
    s.data_comm_seconds = p.exchange;
    if (layout.offload_optimizer) {
      // Gradients to the host, updated weights back.
      out.offload_seconds =
          std::max(out.offload_seconds, p.held.gradients / st.alone.d2h_bytes_per_s + p.held.weights / st.alone.h2d_bytes_per_s);
    }
    slowest = std::max(slowest, s.micro_batch_seconds);
    if (s.peak_bytes > out.peak_bytes) out.peak_bytes = s.peak_bytes, out.peak_stage = static_cast<int>(index);
    out.stages.push_back(s);
  }
  double last = 0, per_micro_batch_comm = 0, data_comm = 0;
  for (const StageEstimate& s : out.stages) {
    last = std::max(last, s.data_comm_seconds + s.optimizer_seconds);
    data_comm = std::max(data_comm, s.data_comm_seconds);
    if (s.micro_batch_seconds == slowest) {
      per_micro_batch_comm = s.tensor_comm_seconds + s.pipeline_comm_seconds + s.context_comm_seconds + s.expert_comm_seconds;
    }
  }
  const double steps = micro_batch_turns(layout);
  out.bubble_seconds = (layout.pipeline - 1.0) / layout.virtual_stages * slowest;
  out.iteration_seconds = steps * slowest + last + out.offload_seconds;
  out.exposed_comm_seconds = steps * per_micro_batch_comm + data_comm;
  out.tokens_per_s = static_cast<double>(layout.global_batch()) * shape_.tokens / out.iteration_seconds;
  if (peak_flops_ > 0) {
    out.model_flops_utilization =
        3 * model_flops_ * layout.global_batch() / (out.iteration_seconds * layout.gpus() * peak_flops_);
  }
  return out;
}

LayoutEstimate estimate_layout(const LayerModel& whole, const ParallelLayout& layout, const LayoutRequest& request,
                               const std::string& plan) {
  return LayoutPricer(whole, request).estimate(layout, plan);
}

}  // namespace papaya::model
