// Training state and faults: a run saved and resumed goes on bit for bit
// (any plan, fp32 and bf16); a damaged or mismatched state is refused; a loss
// that is not finite stops training; the first step's figures are any step's.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "executor/data.h"
#include "executor/layout_probe.h"
#include "executor/memory.h"
#include "executor/networks/zoo.h"
#include "executor/optimizer.h"
#include "executor/trainer.h"
#include "executor/training_state.h"
#include "model/error.h"
#include "tests/executor/moms_fixture.h"

namespace papaya::executor {
namespace {

// A network built, planned and ready to train as papaya train makes it.
struct TrainingRun {
  TrainingRun(const model::NetworkConfig& config, const std::string& plan, const std::string& precision = "fp32")
      : data(make_synthetic_data(config, torch::kCPU, 3)) {
    torch::manual_seed(3);
    network = build_network(config);
    network->set_precision(resolve_precision(precision, torch::kCPU));
    const model::NetworkLayout layout = probe_layout(*network);
    PlanOptions plan_options;
    plan_options.rounding_seed = 3;
    plan_options.adaptive_every = 2;  // estimates at steps 0, 2, 4: one just before the state is saved
    applied = apply_plan(*network, model::load_plan(plan, layout, config.name), layout, plan_options);
    options.batch = 4;
    options.lr = 3e-3;
    options.warmup_steps = 0;
    options.before_step = [this](int step) { applied.begin_step(step); };
    optimizer = make_optimizer(*network, options.lr, options.weight_decay);
  }
  TrainingRun(const TrainingRun&) = delete;

  TrainingParts parts() { return {*network, *optimizer, *data, applied}; }
  TrainReport train_to(int steps) {
    options.steps = steps;
    return train(*network, *optimizer, *data, memory, options);
  }

  MemoryTracker memory{torch::kCPU};
  std::unique_ptr<DataSource> data;
  std::shared_ptr<Network> network;
  AppliedPlan applied;
  TrainOptions options;
  std::unique_ptr<torch::optim::AdamW> optimizer;
};

std::string state_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("papaya-state-" + std::to_string(::getpid()) + "-" + name)).string();
}

bool same_parameters(const Network& a, const Network& b) {
  const auto pa = a.named_parameters(), pb = b.named_parameters();
  if (pa.size() != pb.size()) return false;
  for (size_t i = 0; i < pa.size(); ++i) {
    if (pa[i].key() != pb[i].key() || !torch::equal(pa[i].value(), pb[i].value())) return false;
  }
  return true;
}

struct Case {
  std::string network, plan, precision;
};

class Resume : public ::testing::TestWithParam<Case> {};

TEST_P(Resume, GoesOnBitForBit) {
  const Case& c = GetParam();
  const model::NetworkConfig config = testing::tiny_config(c.network, 0.1);
  const std::string path = state_path(c.network + c.plan);

  TrainingRun whole(config, c.plan, c.precision);
  const TrainReport uninterrupted = whole.train_to(6);

  std::vector<double> losses;
  {
    TrainingRun first(config, c.plan, c.precision);
    losses = first.train_to(3).losses;
    save_training_state(path, {{"what", "a test"}}, {3, losses}, first.parts());
  }
  TrainingRun second(config, c.plan, c.precision);
  const TrainingState state = TrainingState::read(path, torch::kCPU);
  EXPECT_EQ(state.run(), nlohmann::json({{"what", "a test"}}));
  EXPECT_EQ(state.progress().steps_done, 3);
  EXPECT_EQ(state.progress().losses, losses);
  state.restore(second.parts());
  second.options.first_step = 3;
  const TrainReport rest = second.train_to(6);
  std::filesystem::remove(path);

  EXPECT_EQ(rest.steps_done, 6);
  losses.insert(losses.end(), rest.losses.begin(), rest.losses.end());
  EXPECT_EQ(losses, uninterrupted.losses);  // exactly
  EXPECT_TRUE(same_parameters(*second.network, *whole.network));
}

// The delayed FP8 recipe's scales come from the amax history of the steps
// before: a resumed run takes them up where the state left them.
INSTANTIATE_TEST_SUITE_P(Plans, Resume,
                         ::testing::Values(Case{"gpt-tiny", "keep", "fp32"}, Case{"gpt-tiny", "recompute-all", "fp32"},
                                           Case{"gpt-tiny", "quantize-4", "fp32"}, Case{"gpt-tiny", "adaptive-4", "fp32"},
                                           Case{"gpt-tiny", "quantize-2+invert", "fp32"}, Case{"gpt-tiny", "keep", "bf16"},
                                           Case{"gpt-tiny", "adaptive-4", "bf16"}, Case{"gpt-tiny", "quantize-2+invert", "bf16"},
                                           Case{"resnet-tiny", "keep", "fp32"}, Case{"resnet-tiny", "quantize-4", "bf16"},
                                           Case{"gpt-tiny", "keep", "fp8-delayed"},
                                           Case{"gpt-tiny", "recompute-all", "fp8-delayed"},
                                           Case{"gpt-tiny", "quantize-4", "fp8-tensorwise"}),
                         [](const auto& info) {
                           std::string name = info.param.network + "_" + info.param.plan + "_" + info.param.precision;
                           for (char& ch : name) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return name;
                         });

TEST(TrainingState, AnotherNetworksStateIsRefused) {
  const std::string path = state_path("other");
  {
    TrainingRun gpt(testing::tiny_config("gpt-tiny"), "keep");
    gpt.train_to(1);
    save_training_state(path, {}, {1, {0.0}}, gpt.parts());
  }
  TrainingRun bert(testing::tiny_config("bert-tiny"), "keep");
  const TrainingState state = TrainingState::read(path, torch::kCPU);
  EXPECT_THROW(state.restore(bert.parts()), InputError);
  TrainingRun adaptive(testing::tiny_config("gpt-tiny"), "adaptive-4");  // the same weights, another plan's controllers
  EXPECT_THROW(state.restore(adaptive.parts()), InputError);
  std::filesystem::remove(path);
}

TEST(TrainingState, DamagedFilesAreRefused) {
  const std::string path = state_path("damaged");
  std::ofstream(path) << "not a training state";
  EXPECT_THROW(TrainingState::read(path, torch::kCPU), InputError);
  {
    TrainingRun run(testing::tiny_config("mlp-tiny"), "keep");
    save_training_state(path, {}, {0, {}}, run.parts());
  }
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size / 2);
  EXPECT_THROW(TrainingState::read(path, torch::kCPU), InputError);
  std::filesystem::remove(path);
  EXPECT_THROW(TrainingState::read(path, torch::kCPU), InputError);  // none
}

// LibTorch's AdamW makes its state in the first step: made beforehand, the
// first step holds what every step holds, so that a one-step run's figures
// are right (its activation peak was negative: the state counted as static).
TEST(FirstStep, FiguresAreThoseOfAnyStep) {
  for (const char* name : {"mlp-tiny", "gpt-tiny"}) {
    TrainingRun one(testing::tiny_config(name), "keep");
    const TrainReport first = one.train_to(1);
    TrainingRun three(testing::tiny_config(name), "keep");
    three.options.warmup_steps = 2;
    const TrainReport third = three.train_to(3);
    EXPECT_EQ(first.static_bytes, third.static_bytes) << name;
    EXPECT_GT(first.forward_backward_peak_bytes, first.static_bytes) << name;
    EXPECT_EQ(first.forward_backward_peak_bytes - first.static_bytes, third.forward_backward_peak_bytes - third.static_bytes)
        << name;
  }
}

TEST(FirstStep, MakingTheStateChangesNoWeight) {
  torch::manual_seed(0);
  auto network = build_network(testing::tiny_config("gpt-tiny"));
  std::vector<torch::Tensor> before;
  for (const auto& p : network->parameters()) before.push_back(p.detach().clone());
  const auto optimizer = make_optimizer(*network, 1e-3, 0.01);
  for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(torch::equal(network->parameters()[i], before[i])) << i;
  EXPECT_EQ(optimizer->state().size(), before.size());
  for (const auto& entry : optimizer->state()) {
    const auto& s = static_cast<const torch::optim::AdamWParamState&>(*entry.second);
    EXPECT_EQ(s.step(), 0);
    EXPECT_EQ(s.exp_avg().abs().sum().item<double>(), 0);
  }
}

TEST(NonFinite, ALossThatOverflowsStopsTrainingNamingTheStepAndLayer) {
  TrainingRun run(testing::tiny_config("gpt-tiny"), "keep");
  run.options.lr = 1e30;
  run.optimizer = make_optimizer(*run.network, run.options.lr, run.options.weight_decay);
  try {
    run.train_to(20);
    FAIL() << "trained 20 steps at lr 1e30";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("training stopped at step "), std::string::npos) << what;
    EXPECT_NE(what.find("layer '"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace papaya::executor
