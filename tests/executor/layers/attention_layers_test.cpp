// Grouped-query attention and rotary embeddings against their textbook
// forms: HuggingFace's repeat_kv (each k/v head copied for its group of query
// heads) and rotate_half. Values and gradients must agree, on the native path
// and on the MOM path: there q, k and v are quantized to 8 bits, and hold
// values that 8 bits store exactly, so that any difference is the path's.
#include <gtest/gtest.h>

#include "executor/layers/attention.h"
#include "executor/layers/rotary.h"
#include "model/catalog/rotary_frequencies.h"
#include "tests/executor/moms_fixture.h"

namespace papaya::executor {
namespace {

constexpr int64_t batch = 2, heads = 6, kv_heads = 2, tokens = 5, head_dim = 8;

// Each k/v head repeated for the consecutive query heads it serves.
torch::Tensor repeat_kv(const torch::Tensor& t) { return t.repeat_interleave(heads / kv_heads, 1); }

torch::Tensor reference_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  torch::Tensor scores = torch::matmul(q, repeat_kv(k).transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim));
  scores = scores.masked_fill(torch::ones({tokens, tokens}, torch::kBool).triu(1), -std::numeric_limits<double>::infinity());
  return torch::matmul(torch::softmax(scores, -1), repeat_kv(v));
}

struct Gradients {
  torch::Tensor out, q, k, v;
};

// Attention's three layers on leaf copies of q, k, v; `store`: how q, k and
// v are stored (none: kept, the native path); probabilities are kept.
Gradients run_layers(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& g,
                     const std::optional<StoreSpec>& store) {
  AttentionScores scores(head_dim, true, std::make_shared<SequenceTables>());
  Softmax softmax;
  AttentionContext context;
  if (store) {
    scores.set_store_spec(scores.slot_index("q"), *store);
    scores.set_store_spec(scores.slot_index("k"), *store);
    context.set_store_spec(context.slot_index("v"), *store);
  }
  Gradients r{{}, q.detach().requires_grad_(), k.detach().requires_grad_(), v.detach().requires_grad_()};
  r.out = context.forward(softmax.forward(scores.forward(r.q, r.k)), r.v);
  r.out.backward(g);
  return r;
}

TEST(GroupedQueryAttention, EqualsRepeatedKeysAndValuesOnEveryPath) {
  torch::manual_seed(0);
  const torch::Tensor q = testing::on_8bit_grid({batch, heads, tokens, head_dim});
  const torch::Tensor k = testing::on_8bit_grid({batch, kv_heads, tokens, head_dim});
  const torch::Tensor v = testing::on_8bit_grid({batch, kv_heads, tokens, head_dim});
  const torch::Tensor g = torch::randn({batch, heads, tokens, head_dim});
  Gradients expected{{}, q.clone().requires_grad_(), k.clone().requires_grad_(), v.clone().requires_grad_()};
  expected.out = reference_attention(expected.q, expected.k, expected.v);
  expected.out.backward(g);

  for (const auto& store : {std::optional<StoreSpec>(), std::optional<StoreSpec>(testing::eight_bits())}) {
    const Gradients got = run_layers(q, k, v, g, store);
    const std::string path = store ? "MOM path" : "native path";
    EXPECT_TRUE(torch::allclose(got.out, expected.out, 1e-5, 1e-6)) << path;
    EXPECT_TRUE(torch::allclose(got.q.grad(), expected.q.grad(), 1e-5, 1e-6)) << path;
    EXPECT_TRUE(torch::allclose(got.k.grad(), expected.k.grad(), 1e-5, 1e-6)) << path;
    EXPECT_TRUE(torch::allclose(got.v.grad(), expected.v.grad(), 1e-5, 1e-6)) << path;
  }
}

// HuggingFace's apply_rotary_pos_emb on the first `dims` dimensions.
torch::Tensor reference_rotary(const torch::Tensor& x, int64_t dims, double base) {
  const torch::Tensor inverse = 1.0 / torch::pow(base, torch::arange(0, dims, 2, torch::kDouble) / dims);
  const torch::Tensor angles = torch::outer(torch::arange(x.size(-2), torch::kDouble), inverse);
  const torch::Tensor emb = torch::cat({angles, angles}, -1).to(x.scalar_type());
  const torch::Tensor rot = x.narrow(-1, 0, dims), pass = x.narrow(-1, dims, x.size(-1) - dims);
  const torch::Tensor rotated_half = torch::cat({-rot.narrow(-1, dims / 2, dims / 2), rot.narrow(-1, 0, dims / 2)}, -1);
  return torch::cat({rot * emb.cos() + rotated_half * emb.sin(), pass}, -1);
}

TEST(Rotary, EqualsHuggingFacesRotationFullAndPartial) {
  torch::manual_seed(0);
  for (const int64_t dims : {head_dim, head_dim / 4}) {
    const torch::Tensor x = torch::randn({batch, heads, tokens, head_dim});
    const torch::Tensor g = torch::randn({batch, heads, tokens, head_dim});
    const torch::Tensor exact = x.clone().requires_grad_();
    reference_rotary(exact, dims, 10000).backward(g);
    const torch::Tensor input = x.clone().requires_grad_();
    Rotary rotary(dims, 10000, std::make_shared<SequenceTables>());
    const torch::Tensor y = rotary.forward(input);
    y.backward(g);
    EXPECT_TRUE(torch::allclose(y, reference_rotary(x, dims, 10000), 1e-5, 1e-6)) << dims;
    EXPECT_TRUE(torch::allclose(input.grad(), exact.grad(), 1e-5, 1e-6)) << dims;
  }
}

// Scaled linearly by 2, position 2p turns as position p did.
TEST(Rotary, LinearScalingSlowsEveryFrequency) {
  SequenceTables tables;
  model::RopeScaling linear;
  linear.type = "linear";
  linear.factor = 2;
  const auto [cos, sin] = tables.rotary(8, 16, 10000, linear, torch::kCPU, torch::kFloat);
  const auto [plain_cos, plain_sin] = tables.rotary(8, 16, 10000, {}, torch::kCPU, torch::kFloat);
  for (int64_t p = 0; p < 4; ++p) {
    EXPECT_TRUE(torch::allclose(cos[2 * p], plain_cos[p], 1e-6, 1e-6)) << p;
    EXPECT_TRUE(torch::allclose(sin[2 * p], plain_sin[p], 1e-6, 1e-6)) << p;
  }
}

// yarn: cos and sin are the yarn frequencies' angles times the attention
// factor (1.5 here), so that position 0 scales what it rotates by it; a
// rotation's gradient is its transpose, scaled alike.
TEST(Rotary, YarnScalesTheRotationByItsAttentionFactor) {
  model::RopeScaling yarn;
  yarn.type = "yarn";
  yarn.factor = 8;
  yarn.original_max_positions = 16;
  yarn.attention_factor = 1.5;
  SequenceTables tables;
  const auto [cos, sin] = tables.rotary(tokens, 16, 10000, yarn, torch::kCPU, torch::kFloat);
  const std::vector<double> frequencies = model::rotary_frequencies(16, 10000, yarn);
  const torch::Tensor angles = torch::outer(torch::arange(tokens, torch::kDouble), torch::tensor(frequencies, torch::kDouble));
  EXPECT_TRUE(torch::allclose(cos, (angles.cos() * 1.5).repeat({1, 2}).to(torch::kFloat), 1e-6, 1e-6));
  EXPECT_TRUE(torch::allclose(sin, (angles.sin() * 1.5).repeat({1, 2}).to(torch::kFloat), 1e-6, 1e-6));
  torch::manual_seed(0);
  const torch::Tensor x = torch::randn({batch, heads, tokens, 16}).requires_grad_();
  Rotary rotary(16, 10000, std::make_shared<SequenceTables>(), yarn);
  const torch::Tensor y = rotary.forward(x);
  EXPECT_TRUE(torch::allclose(y.select(2, 0), x.select(2, 0) * 1.5, 1e-6, 1e-6));
  // Norms grow by the factor at every position: a rotation times 1.5.
  EXPECT_TRUE(torch::allclose(y.norm(2, -1), x.norm(2, -1) * 1.5, 1e-5, 1e-5));
  y.sum().backward();
  EXPECT_TRUE(torch::allclose(x.grad().norm(2, -1), torch::ones({batch, heads, tokens}).mul(4 * 1.5), 1e-5, 1e-5));
}

}  // namespace
}  // namespace papaya::executor
