// Fused attention against the materialized path (scores, softmax, context)
// and a float64 reference: its output and q's, k's and v's gradients, in
// fp32 and bf16, causal and not, grouped-query, and with dropout at one
// seed. The bound of each comparison is the materialized path's own error
// against the reference, in the same dtype: fused attention must be as
// exact as the layers it replaces, on any CPU.
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <mutex>

#include "executor/layers/attention.h"
#include "executor/layers/attention_blocks.h"
#include "executor/layers/elementwise.h"
#include "executor/layers/fused_attention.h"
#include "tests/executor/moms_fixture.h"

namespace papaya::executor {
namespace {

// More tokens than a block of rows, and a number of keys no block size
// divides: every edge of the blocks is crossed.
constexpr int64_t batch = 2, heads = 6, kv_heads = 2, tokens = 37, head_dim = 8;

struct Result {
  torch::Tensor out, q, k, v;  // the output and the inputs' gradients
  torch::Tensor sinks;         // with sinks: their gradient
};

torch::Tensor repeat_kv(const torch::Tensor& t) { return t.repeat_interleave(heads / kv_heads, 1); }

// The textbook form in float64, each k/v head repeated for its group; `mask`
// (batch, heads, tokens, tokens): the dropout's, applied after the softmax.
// `sinks` (heads): a logit a head joined to each row's softmax, its column
// dropped after (GPT-OSS's eager attention).
Result reference(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& g, bool causal,
                 const torch::Tensor& mask = {}, int64_t window = 0, double softcap = 0, const torch::Tensor& sinks = {}) {
  Result r{{},
           q.to(torch::kDouble).requires_grad_(),
           k.to(torch::kDouble).requires_grad_(),
           v.to(torch::kDouble).requires_grad_(),
           sinks.defined() ? sinks.to(torch::kDouble).requires_grad_() : torch::Tensor()};
  torch::Tensor scores = torch::matmul(r.q, repeat_kv(r.k).transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim));
  if (softcap > 0) scores = torch::tanh(scores / softcap) * softcap;
  if (causal) {
    scores = scores.masked_fill(torch::ones({tokens, tokens}, torch::kBool).triu(1), -std::numeric_limits<double>::infinity());
  }
  if (window > 0) {  // key j of row i hidden where i - j >= window
    scores =
        scores.masked_fill(torch::ones({tokens, tokens}, torch::kBool).tril(-window), -std::numeric_limits<double>::infinity());
  }
  torch::Tensor probs;
  if (sinks.defined()) {
    const torch::Tensor column = r.sinks.view({1, heads, 1, 1}).expand({batch, heads, tokens, 1});
    probs = torch::softmax(torch::cat({scores, column}, -1), -1).narrow(-1, 0, tokens);
  } else {
    probs = torch::softmax(scores, -1);
  }
  if (mask.defined()) probs = probs * mask.to(torch::kDouble);
  r.out = torch::matmul(probs, repeat_kv(r.v));
  r.out.backward(g.to(torch::kDouble));
  return r;
}

Result leaves(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  return {{}, q.detach().requires_grad_(), k.detach().requires_grad_(), v.detach().requires_grad_(), {}};
}

Result materialized(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& g, bool causal) {
  AttentionScores scores(head_dim, causal, std::make_shared<SequenceTables>());
  Softmax softmax;
  AttentionContext context;
  Result r = leaves(q, k, v);
  r.out = context.forward(softmax.forward(scores.forward(r.q, r.k)), r.v);
  r.out.backward(g);
  return r;
}

Result fused(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& g, bool causal,
             double dropout = 0, int64_t window = 0, double softcap = 0, const torch::Tensor& sinks = {}) {
  FusedAttention layer(head_dim, causal, dropout, window);
  layer.softcap = softcap;
  if (sinks.defined()) {
    layer.add_sinks(heads);
    const torch::NoGradGuard no_grad;
    layer.sinks.copy_(sinks);
  }
  Result r = leaves(q, k, v);
  r.out = layer.forward(r.q, r.k, r.v);
  r.out.backward(g);
  if (sinks.defined()) r.sinks = layer.sinks.grad();
  return r;
}

double largest_error(const torch::Tensor& got, const torch::Tensor& reference) {
  return (got.to(torch::kDouble) - reference.to(torch::kDouble)).abs().max().item<double>();
}

std::array<torch::Tensor, 4> four(const Result& r) { return {r.out, r.q.grad(), r.k.grad(), r.v.grad()}; }

// `got` within the error `materialized` has against `its_exact` (both in
// `got`'s dtype, or a few roundings of the largest value where that is
// smaller) of `exact`, in each of the four.
void expect_as_exact(const Result& got, const Result& exact, const Result& materialized, const Result& its_exact,
                     const std::string& what) {
  const char* names[] = {"output", "q's gradient", "k's gradient", "v's gradient"};
  const auto g = four(got), e = four(exact), m = four(materialized), me = four(its_exact);
  for (size_t i = 0; i < 4; ++i) {
    const double epsilon = g[i].scalar_type() == torch::kBFloat16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -23);
    const double bound = 4 * std::max(largest_error(m[i], me[i]), epsilon * e[i].abs().max().item<double>());
    EXPECT_LE(largest_error(g[i], e[i]), bound) << what << ", " << names[i];
    EXPECT_EQ(g[i].scalar_type(), m[i].scalar_type()) << what << ", " << names[i];
  }
}

struct Inputs {
  torch::Tensor q, k, v, g;
};

Inputs inputs(torch::ScalarType dtype) {
  torch::manual_seed(0);
  return {torch::randn({batch, heads, tokens, head_dim}).to(dtype), torch::randn({batch, kv_heads, tokens, head_dim}).to(dtype),
          torch::randn({batch, kv_heads, tokens, head_dim}).to(dtype), torch::randn({batch, heads, tokens, head_dim}).to(dtype)};
}

TEST(FusedAttention, EqualsTheMaterializedLayersInFp32AndBf16CausalOrNot) {
  for (const torch::ScalarType dtype : {torch::kFloat, torch::kBFloat16}) {
    for (const bool causal : {true, false}) {
      const Inputs in = inputs(dtype);
      const std::string what = std::string(c10::toString(dtype)) + (causal ? ", causal" : ", not causal");
      const Result exact = reference(in.q, in.k, in.v, in.g, causal);
      expect_as_exact(fused(in.q, in.k, in.v, in.g, causal), exact, materialized(in.q, in.k, in.v, in.g, causal), exact, what);
    }
  }
}

// A sliding window (each row sees its last `window` keys): against the
// float64 reference with the window's mask, as exact as the materialized
// path is without one; windows of one key, fewer than a block of keys, more
// than a block of rows, and the whole sequence (no window at all: the same
// bits as plain causal attention).
TEST(FusedAttention, WithinASlidingWindowEqualsTheReference) {
  for (const torch::ScalarType dtype : {torch::kFloat, torch::kBFloat16}) {
    const Inputs in = inputs(dtype);
    const Result exact = reference(in.q, in.k, in.v, in.g, true);
    const Result m = materialized(in.q, in.k, in.v, in.g, true);
    for (const int64_t window : {1, 5, 20}) {
      const std::string what = std::string(c10::toString(dtype)) + ", window " + std::to_string(window);
      expect_as_exact(fused(in.q, in.k, in.v, in.g, true, 0, window), reference(in.q, in.k, in.v, in.g, true, {}, window), m,
                      exact, what);
    }
    const auto whole = four(fused(in.q, in.k, in.v, in.g, true, 0, tokens)), plain = four(fused(in.q, in.k, in.v, in.g, true));
    for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(torch::equal(whole[i], plain[i])) << c10::toString(dtype) << " " << i;
  }
}

// Soft-capped scores (cap·tanh(score / cap), Gemma 2's): against the float64
// reference with the cap, as exact as the materialized path is without one,
// causal or not and within a window; caps of 0.5 (every score bent) and 3.
TEST(FusedAttention, WithSoftCappedScoresEqualsTheReference) {
  for (const torch::ScalarType dtype : {torch::kFloat, torch::kBFloat16}) {
    for (const bool causal : {true, false}) {
      const Inputs in = inputs(dtype);
      const Result exact = reference(in.q, in.k, in.v, in.g, causal);
      const Result m = materialized(in.q, in.k, in.v, in.g, causal);
      for (const double cap : {0.5, 3.0}) {
        const std::string what = std::string(c10::toString(dtype)) + (causal ? ", causal" : "") + ", cap " + std::to_string(cap);
        const Result capped = reference(in.q, in.k, in.v, in.g, causal, {}, 0, cap);
        expect_as_exact(fused(in.q, in.k, in.v, in.g, causal, 0, 0, cap), capped, m, exact, what);
        // The cap changes the result: a test of it, not of the plain path.
        EXPECT_GT(largest_error(capped.q.grad(), exact.q.grad()), 1e-2) << what;
      }
      if (causal) {
        expect_as_exact(fused(in.q, in.k, in.v, in.g, true, 0, 5, 0.5), reference(in.q, in.k, in.v, in.g, true, {}, 5, 0.5), m,
                        exact, std::string(c10::toString(dtype)) + ", window 5, cap 0.5");
      }
    }
  }
}

// Attention sinks (GPT-OSS): a logit a head in each row's softmax with no
// value. Against the float64 reference that appends the sinks as a column
// and drops it after the softmax, as exact as the materialized path is
// without them; the sinks' own gradient (a sum over every row, as v's is)
// within the materialized path's relative error on v's gradient. Sinks of
// about ±2, so that they take a share of each row.
TEST(FusedAttention, WithSinksEqualsTheReference) {
  torch::manual_seed(1);
  const torch::Tensor sinks = torch::randn({heads}) * 2;
  for (const torch::ScalarType dtype : {torch::kFloat, torch::kBFloat16}) {
    for (const bool causal : {true, false}) {
      const Inputs in = inputs(dtype);
      const std::string what = std::string(c10::toString(dtype)) + (causal ? ", causal" : "");
      const Result exact = reference(in.q, in.k, in.v, in.g, causal);
      const Result m = materialized(in.q, in.k, in.v, in.g, causal);
      const Result with = reference(in.q, in.k, in.v, in.g, causal, {}, 0, 0, sinks);
      const Result got = fused(in.q, in.k, in.v, in.g, causal, 0, 0, 0, sinks);
      expect_as_exact(got, with, m, exact, what);
      const double epsilon = dtype == torch::kBFloat16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -23);
      const double v_relative = largest_error(m.v.grad(), exact.v.grad()) / exact.v.grad().abs().max().item<double>();
      EXPECT_LE(largest_error(got.sinks, with.sinks.grad()),
                4 * std::max(v_relative, epsilon) * with.sinks.grad().abs().max().item<double>())
          << what;
      EXPECT_EQ(got.sinks.scalar_type(), torch::kFloat) << what;
      EXPECT_GT(largest_error(with.out, exact.out), 1e-2) << what;  // the sinks change the result
    }
  }
}

// Values narrower than q and k (latent attention's: 128 against 192 in
// DeepSeek-V3): the output and v's gradient at v's width, as exact as the
// materialized layers.
TEST(FusedAttention, WithValuesOfAnotherWidthEqualsTheReference) {
  constexpr int64_t value_dim = 5;
  for (const torch::ScalarType dtype : {torch::kFloat, torch::kBFloat16}) {
    Inputs in = inputs(dtype);
    in.v = torch::randn({batch, kv_heads, tokens, value_dim}).to(dtype);
    in.g = torch::randn({batch, heads, tokens, value_dim}).to(dtype);
    for (const bool causal : {true, false}) {
      const Result got = fused(in.q, in.k, in.v, in.g, causal);
      EXPECT_EQ(got.out.sizes(), (std::vector<int64_t>{batch, heads, tokens, value_dim}));
      const Result exact = reference(in.q, in.k, in.v, in.g, causal);
      expect_as_exact(got, exact, materialized(in.q, in.k, in.v, in.g, causal), exact, causal ? "causal" : "not causal");
    }
  }
}

TEST(FusedAttention, ItsOutputIsTokenMajorAsFlashAttentionLaysItOut) {
  const Inputs in = inputs(torch::kFloat);
  FusedAttention layer(head_dim, true, 0);
  const torch::Tensor out = layer.forward(in.q, in.k, in.v);
  EXPECT_EQ(out.sizes(), in.q.sizes());
  // Heads concatenated per token are a view, not a copy: the output
  // projection's saved input is the attention's saved output.
  const torch::Tensor concatenated = out.transpose(1, 2).reshape({batch, tokens, heads * head_dim});
  EXPECT_EQ(concatenated.data_ptr(), out.data_ptr());
}

// The dropout's mask at a seed: the same whatever the blocks it is drawn in.
TEST(FusedAttention, ADropoutMaskIsTheSameDrawnInAnyBlocks) {
  const BlockAttention how{1, false, 0.3, 12345};
  const torch::Tensor whole = attention_dropout_mask(how, batch, heads, tokens, 0, tokens, 0, tokens);
  const torch::Tensor part = attention_dropout_mask(how, batch, heads, tokens, 5, 11, 7, 13);
  EXPECT_TRUE(torch::equal(part, whole.narrow(2, 5, 11).narrow(3, 7, 13)));
  const double kept = (whole > 0).to(torch::kDouble).mean().item<double>();
  const double n = static_cast<double>(whole.numel());
  EXPECT_NEAR(kept, 0.7, 5 * std::sqrt(0.7 * 0.3 / n));  // five standard deviations of a Bernoulli mean
  EXPECT_FLOAT_EQ(whole.max().item<float>(), static_cast<float>(1 / 0.7));
  // Another seed draws another mask.
  const BlockAttention other{1, false, 0.3, 54321};
  EXPECT_FALSE(torch::equal(attention_dropout_mask(other, batch, heads, tokens, 0, tokens, 0, tokens), whole));
}

TEST(FusedAttention, WithDropoutEqualsTheReferenceUnderTheSeedsMask) {
  const double p = 0.25;
  for (const bool causal : {true, false}) {
    const Inputs in = inputs(torch::kFloat);
    torch::manual_seed(7);
    uint64_t seed = 0;
    {
      // The seed the layer draws first: the next 64 bits of the default generator.
      at::Generator generator = at::detail::getDefaultCPUGenerator();
      const std::lock_guard<std::mutex> lock(generator.mutex());
      seed = generator.get<at::CPUGeneratorImpl>()->random64();
    }
    torch::manual_seed(7);
    const Result got = fused(in.q, in.k, in.v, in.g, causal, p);
    const BlockAttention how{1, causal, p, seed};
    const torch::Tensor mask = attention_dropout_mask(how, batch, heads, tokens, 0, tokens, 0, tokens);
    // The bound: the materialized path's error without dropout; a wrong mask is off by whole values.
    expect_as_exact(got, reference(in.q, in.k, in.v, in.g, causal, mask), materialized(in.q, in.k, in.v, in.g, causal),
                    reference(in.q, in.k, in.v, in.g, causal), causal ? "causal" : "not causal");
  }
}

// The plan's path (q, k and v stored in 8 bits) computes what keep computes,
// to the bit, where 8 bits hold them exactly.
TEST(FusedAttention, QuantizedOperandsOnTheirGridGiveKeepsGradients) {
  torch::manual_seed(0);
  const torch::Tensor q = testing::on_8bit_grid({batch, heads, tokens, head_dim});
  const torch::Tensor k = testing::on_8bit_grid({batch, kv_heads, tokens, head_dim});
  const torch::Tensor v = testing::on_8bit_grid({batch, kv_heads, tokens, head_dim});
  const torch::Tensor g = torch::randn({batch, heads, tokens, head_dim});
  const Result keep = fused(q, k, v, g, true);
  FusedAttention layer(head_dim, true, 0);
  for (const char* slot : {"q", "k", "v"}) layer.set_store_spec(layer.slot_index(slot), testing::eight_bits());
  Result planned = leaves(q, k, v);
  planned.out = layer.forward(planned.q, planned.k, planned.v);
  planned.out.backward(g);
  EXPECT_TRUE(torch::equal(planned.out, keep.out));
  EXPECT_TRUE(torch::equal(planned.q.grad(), keep.q.grad()));
  EXPECT_TRUE(torch::equal(planned.k.grad(), keep.k.grad()));
  EXPECT_TRUE(torch::equal(planned.v.grad(), keep.v.grad()));
}

}  // namespace
}  // namespace papaya::executor
