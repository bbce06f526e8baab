#include "executor/torchscript/synthetic_data.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <limits>

#include "model/error.h"

namespace papaya::executor::torchscript {
namespace {

TEST(SyntheticData, InputsFollowTheirSpecs) {
  at::Generator generator = at::detail::createCPUGenerator(7);
  const auto inputs =
      synthetic_inputs({model::parse_input_spec("bfloat16[B,3,8]", "test"), model::parse_input_spec("int64[B,16]<50", "test"),
                        model::parse_input_spec("bool[B]", "test")},
                       5, generator);
  ASSERT_EQ(inputs.size(), 3u);
  const at::Tensor image = inputs[0].toTensor(), tokens = inputs[1].toTensor(), mask = inputs[2].toTensor();
  EXPECT_EQ(image.sizes(), (std::vector<int64_t>{5, 3, 8}));
  EXPECT_EQ(image.scalar_type(), at::kBFloat16);
  EXPECT_EQ(tokens.scalar_type(), at::kLong);
  EXPECT_GE(tokens.min().item<int64_t>(), 0);
  EXPECT_LT(tokens.max().item<int64_t>(), 50);
  EXPECT_GT(tokens.max().item<int64_t>(), 1);  // 80 draws below 50 are not all 0 and 1
  EXPECT_EQ(mask.scalar_type(), at::kBool);
  // The same generator state gives the same batch.
  at::Generator again = at::detail::createCPUGenerator(7);
  EXPECT_TRUE(at::equal(synthetic_inputs({model::parse_input_spec("bfloat16[B,3,8]", "test")}, 5, again)[0].toTensor(), image));
}

// The losses against their definitions, with the labels and targets the
// same generator state draws.
TEST(SyntheticData, LossesFromTheOutputsShape) {
  const at::Tensor logits = torch::randn({4, 10}), sequence = torch::randn({2, 3, 7}), image = torch::randn({2, 3, 4, 4});
  EXPECT_EQ(loss_kind(logits, std::nullopt, "m.pt"), LossKind::cross_entropy);
  EXPECT_EQ(loss_kind(sequence, std::nullopt, "m.pt"), LossKind::cross_entropy);
  EXPECT_EQ(loss_kind(torch::randn({}), std::nullopt, "m.pt"), LossKind::output);
  EXPECT_EQ(loss_kind(image, LossKind::mse, "m.pt"), LossKind::mse);

  at::Generator a = at::detail::createCPUGenerator(3), b = at::detail::createCPUGenerator(3);
  const at::Tensor labels = at::randint(0, 7, {6}, a, at::TensorOptions().dtype(at::kLong));
  const at::Tensor expected = at::nll_loss(at::log_softmax(sequence.reshape({6, 7}), -1), labels);
  EXPECT_TRUE(at::allclose(loss_of(sequence, LossKind::cross_entropy, b, {}, {}, "m.pt"), expected));

  a = at::detail::createCPUGenerator(4), b = at::detail::createCPUGenerator(4);
  const at::Tensor target = at::randn(image.sizes(), a, at::TensorOptions().dtype(at::kFloat));
  EXPECT_TRUE(at::allclose(loss_of(image, LossKind::mse, b, {}, {}, "m.pt"), (image - target).pow(2).mean()));
}

// A rank's output is its rows of the whole batch's: the target it draws is
// those rows of the whole batch's target (the same generator state), so the
// ranks' losses average to the one process's.
TEST(SyntheticData, ARanksDrawnTargetIsItsRowsOfTheWholeBatchs) {
  const at::Tensor sequence = torch::randn({4, 3, 7}), image = torch::randn({4, 2, 5});
  for (const auto& [output, loss_kind] : {std::pair{sequence, LossKind::cross_entropy}, std::pair{image, LossKind::mse}}) {
    const LossKind kind = loss_kind;  // a lambda cannot capture a structured binding in C++17
    const auto loss = [&](const at::Tensor& rows_of_output, const Batch::Rows& rows) {
      return loss_of(rows_of_output, kind, at::detail::createCPUGenerator(5), {}, rows, "m.pt").item<double>();
    };
    const double whole = loss(output, {});
    const double ranks = (loss(output.narrow(0, 0, 2), {0, 4}) + loss(output.narrow(0, 2, 2), {2, 4})) / 2;
    // Means of six values and of twelve: a few float roundings apart.
    EXPECT_NEAR(ranks, whole, 8 * std::numeric_limits<float>::epsilon() * std::abs(whole)) << to_string(kind);
    EXPECT_GT(std::abs(loss(output.narrow(0, 2, 2), {0, 4}) - loss(output.narrow(0, 2, 2), {2, 4})), 0)
        << "rows 2-3 drawn as rows 0-1: " << to_string(kind);
  }
}

// A target the data holds is the one the loss is taken against; one unlike
// the output is named.
TEST(SyntheticData, LossesAgainstTheDatasTarget) {
  at::Generator unused = at::detail::createCPUGenerator(0);
  const at::Tensor logits = torch::randn({4, 10}), labels = torch::tensor({3, 0, 9, 9}, at::kLong);
  EXPECT_TRUE(
      at::allclose(loss_of(logits, LossKind::cross_entropy, unused, labels, {}, "m.pt"), at::cross_entropy_loss(logits, labels)));
  const at::Tensor image = torch::randn({2, 3}), target = torch::randn({2, 3});
  EXPECT_TRUE(at::allclose(loss_of(image, LossKind::mse, unused, target, {}, "m.pt"), (image - target).pow(2).mean()));
  const auto why = [&](const at::Tensor& output, LossKind kind, const at::Tensor& t) {
    try {
      loss_of(output, kind, unused, t, {}, "m.pt");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(why(logits, LossKind::cross_entropy, torch::tensor({3, 0, 10, 1}, at::kLong)),
            "m.pt: the data's labels span [0, 10], outside the 10 classes");
  EXPECT_EQ(why(logits, LossKind::cross_entropy, torch::zeros({4})),
            "m.pt: cross-entropy of logits [4, 10] needs integer labels of 4 values; the data's target is Float[4]");
  EXPECT_EQ(why(image, LossKind::mse, torch::zeros({2, 4})),
            "m.pt: mse of an output [2, 3] needs a floating target of that shape; the data's is Float[2, 4]");
}

TEST(SyntheticData, OutputsWithoutALossAreNamed) {
  const auto why = [](const torch::jit::IValue& output, std::optional<LossKind> asked) {
    try {
      loss_kind(output, asked, "m.pt");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(why(torch::randn({2, 3, 4, 4}), std::nullopt),
            "m.pt: forward returns [2, 3, 4, 4]: papaya makes a loss of a scalar, of logits [B, C] or [B, T, V]; ask for "
            "one (mse or cross-entropy)");
  EXPECT_EQ(why(torch::randn({2, 3, 4, 4}), LossKind::cross_entropy),
            "m.pt: cross-entropy needs logits [B, C] or [B, T, V]; forward returns [2, 3, 4, 4]");
  EXPECT_EQ(why(torch::zeros({2, 3}, at::kLong), std::nullopt),
            "m.pt: forward returns Long values: no loss of them has a gradient");
  EXPECT_NE(why(c10::ivalue::Tuple::create({torch::randn({1})}), std::nullopt).find("not a tensor"), std::string::npos);
  EXPECT_THROW(parse_loss_kind("l1", "--loss"), InputError);
  EXPECT_EQ(parse_loss_kind("cross-entropy", "--loss"), LossKind::cross_entropy);
}

}  // namespace
}  // namespace papaya::executor::torchscript
