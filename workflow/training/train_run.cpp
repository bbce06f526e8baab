#include "workflow/training/train_run.h"

#include <filesystem>

#include "executor/device.h"
#include "executor/distributed/collectives.h"
#include "executor/distributed/data_parallel.h"
#include "executor/distributed/parallel_groups.h"
#include "executor/distributed/pipeline_parallel.h"
#include "executor/distributed/sharded_data_parallel.h"
#include "executor/distributed/tensor_parallel.h"
#include "executor/networks/source_for.h"
#include "executor/networks/zoo.h"
#include "executor/plan_apply.h"
#include "executor/precision.h"
#include "executor/session.h"
#include "executor/torchscript/imported_network.h"
#include "executor/torchscript/trained_archive.h"
#include "executor/trainer.h"
#include "executor/training_state.h"
#include "model/catalog/network_config.h"
#include "model/catalog/transformer_shape.h"
#include "model/error.h"
#include "model/parallel/engines.h"
#include "model/parallel/parallel_layout.h"
#include "workflow/training/resumed_run.h"

namespace papaya::workflow {

void prepare_train_run(TrainRun& run) {
  const torch::Device device = executor::resolve_device(run.device);
  model::ParallelLayout& layout = run.layout;
  const std::string zero = "ZeRO stage " + std::to_string(layout.zero_stage);
  if (layout.zero_stage > 0 && !run.save.empty()) {
    throw InputError("saving the training state under " + zero +
                     ": a sharded optimizer state cannot be saved yet; train without ZeRO to save");
  }
  if (layout.micro_batches == 0) layout.micro_batches = layout.pipeline > 1 ? 2 * layout.pipeline : 1;
  layout.micro_batch = static_cast<int>(run.batch);
  if (run.world) layout.data = run.data_ranks();
  model::check_layout(layout, run.world ? run.world->size : 0);
  model::check_runs_on(layout, model::Engine::papaya, device.is_cuda());
  if (!run.resume.empty()) {
    if (!std::filesystem::is_regular_file(run.resume)) throw InputError("training state " + run.resume + ": no such file");
    if (!run.given.count("network")) return;  // the state's network
  }
  const std::string tensor = "tensor parallelism " + std::to_string(layout.tensor);
  const std::string pipeline = "a pipeline of " + std::to_string(layout.pipeline) + " stages";
  if (layout.tensor > 1 && (!run.save.empty() || !run.resume.empty())) {
    throw InputError(tensor + " with a saved or resumed training state: saving a tensor-parallel state is not built yet");
  }
  if (layout.pipeline > 1 && (!run.save.empty() || !run.resume.empty())) {
    throw InputError(pipeline + " with a saved or resumed training state: saving a pipeline's state is not built yet");
  }
  if (!run.network_config) throw std::logic_error("prepare_train_run: no network loaded");
  const model::NetworkConfig& network = *run.network_config;
  if (network.mixture() && network.mixture()->profiled_experts > 0) {
    throw InputError(network.name +
                     ": moe/profiled_experts builds a few of its experts, for a profile; "
                     "training builds them all: leave it out");
  }
  if (run.precision.empty()) run.precision = run.network_config->precision;
  const executor::Precision precision = executor::resolve_precision(run.precision, device);
  if (run.splits_layers() && precision.dtype == torch::kHalf) {
    throw InputError(run.precision + " with " + (layout.pipeline > 1 ? pipeline : tensor) +
                     ": fp16 loss scaling across split ranks is not built; use bf16");
  }
  if (layout.zero_stage >= 2 && precision.dtype == torch::kHalf) {
    throw InputError(run.precision + " under " + zero +
                     ": fp16 loss scaling needs every gradient on every rank; use bf16, or ZeRO stage 1");
  }
  if (layout.tensor > 1) executor::check_tensor_split(network, layout.tensor, layout.sequence);
  if (run.splits_layers()) {
    if (!std::holds_alternative<model::TransformerConfig>(network.body)) {
      throw InputError((layout.pipeline > 1 ? pipeline : tensor) + ": " + network.name + " is no chain of transformer blocks");
    }
    model::check_layout(layout, model::transformer_shape(network));
    if (layout.pipeline > 1 && network.family == model::Family::gpt && network.transformer().tied_head) {
      throw InputError(pipeline + ": " + network.name +
                       "'s LM head is tied to its embedding, whose weight would be on two stages; not built");
    }
  }
}

void check_rank_devices(const TrainRun& run, int ranks_here) {
  if (!executor::resolve_device(run.device).is_cuda()) return;
  if (!executor::Collectives::nccl_available()) {
    throw InputError("data-parallel ranks on " + run.device +
                     ": this papaya is built without NCCL (LibTorch with CUDA and nccl.h); train them on the CPU");
  }
  if (run.device != "cuda") {
    throw InputError("data-parallel ranks on " + run.device + ": each rank takes cuda:LOCAL_RANK; ask for the device cuda");
  }
  const int gpus = static_cast<int>(torch::cuda::device_count());
  if (ranks_here > gpus) {
    throw InputError(std::to_string(ranks_here) + " ranks on this host, " + std::to_string(gpus) +
                     " GPUs: each rank takes one of its own");
  }
}

executor::TrainReport train_run(const TrainRun& given, const TrainCallbacks& callbacks) {
  const torch::Device device = executor::resolve_device(given.device);
  // A state is read twice: here, for the run it describes, and once the
  // network is built, into it. Neither read's tensors outlive it, so the
  // allocator's figures count none of them.
  nlohmann::json recorded;
  executor::TrainingProgress progress;
  if (!given.resume.empty()) {
    const auto state = executor::TrainingState::read(given.resume, device);
    recorded = state.run();
    progress = state.progress();
  }
  const TrainRun run = given.resume.empty() ? given : resumed_run(given, recorded, progress.steps_done);
  // A rank on CUDA takes the GPU of its place on the host, as torchrun's LOCAL_RANK says.
  const bool rank_on_gpu = run.world && device.is_cuda();
  if (rank_on_gpu) check_rank_devices(run, run.world->local_rank + 1);
  const std::string rank_device = rank_on_gpu ? "cuda:" + std::to_string(run.world->local_rank) : run.device;
  // The ranks meet before anything is built: one that never comes fails fast.
  const auto groups = run.world ? std::make_unique<executor::ParallelGroups>(
                                      *run.world, std::chrono::milliseconds(static_cast<int64_t>(run.timeout_s * 1000)),
                                      executor::resolve_device(rank_device), run.layout.tensor, run.layout.pipeline)
                                : nullptr;
  const int stage = groups ? groups->stage() : 0;
  executor::Collectives* const tensor_ranks = groups ? groups->tensor() : nullptr;
  executor::Collectives* const data_ranks = groups ? groups->data() : nullptr;
  executor::Collectives* const pipeline_ranks = groups ? groups->pipeline() : nullptr;
  executor::SessionOptions session_options;
  session_options.device = rank_device;
  session_options.precision = run.precision;
  session_options.data = run.data;
  session_options.seed = run.seed;
  session_options.lr = run.lr;
  if (data_ranks) session_options.world = data_ranks->world();
  session_options.zero = run.layout.zero_stage;
  if (pipeline_ranks) session_options.stages = pipeline_ranks->world();
  if (tensor_ranks) session_options.tensor_group = executor::tensor_group(*tensor_ranks, run.layout.sequence);
  if (run.resume.empty() && !run.network_config) throw std::logic_error("train_run: the run is not prepared");
  executor::Session session(*executor::source_for(run.resume.empty() ? *run.network_config : recorded_config(run, recorded)),
                            session_options);
  const model::NetworkConfig& config = session.config;
  executor::Network& network = *session.network;
  const auto* archive = dynamic_cast<const executor::torchscript::ImportedNetwork*>(&network);
  if (!run.save_model.empty() && !archive) {
    throw InputError("saving the trained network to " + run.save_model + ": only a TorchScript network is written back, and " +
                     config.name + " is not one (the training state of any network can be saved)");
  }
  model::Plan plan;
  if (!run.resume.empty()) {
    plan = model::parse_plan(recorded.value("plan", nlohmann::json()), session.layout, config.name,
                             "training state " + run.resume + ": plan");
    check_resumed_plan(run, plan, session.layout, config.name);
  } else {
    plan = run.planned ? *run.planned : model::load_plan(run.plan, session.layout, config.name);
  }
  executor::PlanOptions plan_options;
  plan_options.adaptive_every = run.adaptive_every;
  plan_options.rounding_seed = run.seed;
  executor::AppliedPlan applied = executor::apply_plan(network, plan, session.layout, plan_options);
  executor::TrainOptions options;
  options.steps = run.steps;
  options.first_step = progress.steps_done;
  options.batch = run.global_batch();
  options.lr = run.lr;
  const executor::TrainingParts parts{network, *session.optimizer, *session.data, applied};
  if (!run.resume.empty()) executor::TrainingState::read(run.resume, device).restore(parts);
  const auto pipeline =
      pipeline_ranks ? std::make_unique<executor::PipelineParallel>(*pipeline_ranks, network, run.layout.micro_batches) : nullptr;
  if (pipeline)
    options.forward_backward = [&pipeline](const executor::Batch& batch) { return pipeline->forward_backward(batch); };
  const std::vector<torch::Tensor> trained =
      pipeline_ranks ? executor::stage_parameters(network, stage, run.layout.pipeline) : network.trainable_parameters();
  const auto parallel =
      data_ranks && run.layout.zero_stage < 2 ? std::make_unique<executor::DataParallel>(*data_ranks, trained) : nullptr;
  const auto sharded =
      data_ranks && run.layout.zero_stage >= 2
          ? std::make_unique<executor::ShardedDataParallel>(*data_ranks, network, trained, session.trained, run.layout.zero_stage)
          : nullptr;
  if (pipeline && sharded) pipeline->after_each_backward([&sharded] { sharded->reduce_micro_batch(); });
  // After backward: the norms' gradients summed over a group that splits the
  // tokens, then the data-parallel ranks' (the two sums commute).
  const std::shared_ptr<executor::TensorGroup> splits_tokens =
      session_options.tensor_group && session_options.tensor_group->splits_sequence() ? session_options.tensor_group : nullptr;
  if (parallel) {
    parallel->broadcast_parameters();
    if (run.layout.zero_stage == 1) options.after_optimizer_step = [&parallel] { parallel->gather_shards(); };
  }
  if (sharded) {
    sharded->broadcast_parameters();
    options.after_optimizer_step = [&sharded] { sharded->gather_shards(); };
  }
  if (parallel || sharded || splits_tokens) {
    options.after_backward = [&network, &parallel, &sharded, splits_tokens] {
      if (splits_tokens) executor::sum_replicated_gradients(network, *splits_tokens);
      if (parallel) parallel->average_gradients();
      if (sharded) sharded->reduce_gradients();
    };
  }
  const bool rank_zero = !run.world || run.world->rank == 0;
  const bool saves = !run.save.empty() && rank_zero;
  // Under ZeRO-3 every rank takes part: the weights are gathered whole for rank 0 to write.
  const bool saves_model = !run.save_model.empty() && (rank_zero || (sharded && run.layout.zero_stage == 3));

  if (callbacks.on_start) {
    callbacks.on_start({config.name, model::to_string(config.family), network.parameter_count(),
                        network.trainable_parameter_count(), device.str(), executor::device_name(device), plan.name,
                        session.data->describe(), run.precision, run.batch, run.seed, progress.steps_done});
  }
  const nlohmann::json description =
      run.save.empty()
          ? nlohmann::json()
          : describe_run(run, run.resume.empty() ? config.document : recorded.at("network_config"), plan, session.layout);
  options.before_step = [&applied, &sharded](int step) {
    applied.begin_step(step);
    if (sharded) sharded->begin_step();
  };
  options.record_stored_bytes = run.record_stored_bytes;
  options.on_step = [&](int step, int steps, double rank_loss) {
    const double loss = data_ranks ? data_ranks->mean(rank_loss) : rank_loss;  // the global batch's
    progress.losses.push_back(loss);
    progress.steps_done = step;
    if (callbacks.on_step) callbacks.on_step(step, steps, loss);
  };
  options.after_step = [&](int steps_done) {
    const bool stop = callbacks.stop_requested && callbacks.stop_requested();
    const bool due = steps_done == run.steps || (run.save_every > 0 && steps_done % run.save_every == 0);
    if (saves && (stop || due)) executor::save_training_state(run.save, description, progress, parts);
    if (saves_model && (stop || due)) {
      const auto save = [&] {
        if (rank_zero)
          executor::torchscript::save_trained_archive(config.torchscript().archive, archive->module(), run.save_model);
      };
      if (sharded && run.layout.zero_stage == 3) {
        sharded->with_whole_weights(save);
      } else {
        save();
      }
    }
    return !stop;
  };
  executor::TrainReport report = executor::train(network, *session.optimizer, *session.data, session.memory, options);
  report.losses = progress.losses;
  if (groups) {
    for (const auto& row : groups->job().gather({static_cast<double>(report.peak_bytes), static_cast<double>(report.static_bytes),
                                                 report.exchange_seconds, report.median_step_seconds})) {
      report.ranks.push_back({static_cast<int64_t>(row[0]), static_cast<int64_t>(row[1]), row[2], row[3]});
    }
  }
  return report;
}

}  // namespace papaya::workflow
