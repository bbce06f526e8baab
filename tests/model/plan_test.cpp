#include <gtest/gtest.h>

#include "model/error.h"
#include "model/plan.h"

namespace papaya::model {
namespace {

using nlohmann::json;

// A one-block GPT-like layout, as the executor's probe would give it.
NetworkLayout tiny_layout() {
  NetworkLayout l;
  l.segments = {"blocks.0"};
  const auto act = [](const char* n) { return LayoutSlot{n, SlotKind::activation, ""}; };
  l.layers = {
      {"tok_emb", LayerKind::embedding, {{"ids", SlotKind::index, ""}}, "", {}},
      {"blocks.0.ln1",
       LayerKind::layernorm,
       {act("input"), {"mean", SlotKind::stats, ""}, {"rstd", SlotKind::stats, ""}},
       "blocks.0",
       {}},
      {"blocks.0.attn.scores", LayerKind::attention_scores, {act("q"), act("k")}, "blocks.0", {}},
      {"blocks.0.attn.softmax", LayerKind::softmax, {act("output")}, "blocks.0", {}},
      {"blocks.0.attn.drop", LayerKind::dropout, {{"mask", SlotKind::mask, ""}}, "blocks.0", {}},
      {"blocks.0.mlp.fc1", LayerKind::linear, {act("input")}, "blocks.0", {}},
      {"blocks.0.mlp.act", LayerKind::gelu, {act("input")}, "blocks.0", {"blocks.0.mlp.fc2:input"}},
      {"blocks.0.mlp.fc2", LayerKind::linear, {act("input")}, "blocks.0", {}},
      {"ln_f", LayerKind::layernorm, {act("input"), {"mean", SlotKind::stats, ""}, {"rstd", SlotKind::stats, ""}}, "", {}},
      {"lm_head", LayerKind::lm_head, {act("input"), act("logprobs")}, "", {}},
  };
  return l;
}

TEST(Strategy, ParsesTheGrammar) {
  EXPECT_TRUE(parse_tensor_strategy("keep", "t").is_keep());
  TensorStrategy s = parse_tensor_strategy("quantize-2+swap", "t");
  EXPECT_EQ(s.form, Form::quantized);
  EXPECT_EQ(s.bits, 2);
  EXPECT_TRUE(s.swap);
  EXPECT_EQ(s.name(), "quantize-2+swap");
  EXPECT_EQ(parse_tensor_strategy("adaptive-3", "t").name(), "adaptive-3");
  EXPECT_EQ(parse_tensor_strategy("invert", "t").form, Form::inverted);
  EXPECT_EQ(parse_segment_strategy("recompute+quantize-8", "t").name(), "recompute+quantize-8");
  for (const char* bad : {"quantize-3", "quantize-16", "quantize-4+quantize-8", "invert+swap", "keep+swap", "zip", "swap+",
                          "adaptive-1", "recompute+swap"}) {
    EXPECT_THROW(parse_tensor_strategy(bad, "t"), InputError) << bad;
  }
  EXPECT_THROW(parse_segment_strategy("recompute+invert", "t"), InputError);
  EXPECT_THROW(parse_segment_strategy("quantize-4", "t"), InputError);
}

TEST(Strategy, DeviceBytesMatchThePackedLayout) {
  TensorStrategy q4 = parse_tensor_strategy("quantize-4", "t");
  EXPECT_EQ(device_bytes(SlotKind::activation, 1000, 4, TensorStrategy{}), 4000);
  EXPECT_EQ(device_bytes(SlotKind::activation, 1000, 4, q4), 8 * (64 + 4));  // 8 groups of 128
  TensorStrategy mask;
  mask.form = Form::quantized;
  mask.bits = 1;
  EXPECT_EQ(device_bytes(SlotKind::mask, 1001, 1, mask), 126);
  q4.swap = true;
  EXPECT_EQ(device_bytes(SlotKind::activation, 1000, 4, q4), 0);
  EXPECT_EQ(host_bytes(SlotKind::activation, 1000, 4, q4), 8 * (64 + 4));
}

TEST(Strategy, HeadwiseGroupsDoNotCrossHeads) {
  TensorStrategy q2 = parse_tensor_strategy("quantize-2", "t");
  q2.headwise = true;
  // 2 samples x 3 heads of 17 tokens x 16 values: 272 values per head = 5 groups of 64 each.
  EXPECT_EQ(device_bytes(SlotKind::activation, 2 * 3 * 272, 4, q2, 272), 2 * 3 * 5 * (16 + 4));
  // Heads that fill whole groups, or no head size given: as many groups as without headwise.
  EXPECT_EQ(device_bytes(SlotKind::activation, 4 * 512, 4, q2, 512), 32 * (16 + 4));
  EXPECT_EQ(device_bytes(SlotKind::activation, 1000, 4, q2), 16 * (16 + 4));
  q2.headwise = false;
  EXPECT_EQ(device_bytes(SlotKind::activation, 2 * 3 * 272, 4, q2, 272), 26 * (16 + 4));
}

// Found by tests/fuzz/plan.cpp: the message quoted a name's line break as it was.
TEST(Plan, ABadNameIsReportedOnOneLine) {
  try {
    expand_plan_name("keep\nswap", tiny_layout());
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

TEST(Plan, QuantizeTakesEachSlotInItsNaturalForm) {
  const Plan p = expand_plan_name("quantize-4", tiny_layout());
  EXPECT_EQ(p.tensor("blocks.0.mlp.fc1", "input").name(), "quantize-4");
  EXPECT_EQ(p.tensor("blocks.0.attn.drop", "mask").bits, 1);
  EXPECT_TRUE(p.tensor("blocks.0.ln1", "mean").is_keep());
  EXPECT_TRUE(p.tensor("tok_emb", "ids").is_keep());
  EXPECT_EQ(p.tensor("lm_head", "logprobs").form, Form::recomputed);
  EXPECT_TRUE(p.segments.empty());
}

// 8 MiB of fp32 logits a chunk or more; 256 rows where that stays within 64 MiB.
TEST(Strategy, LMHeadChunksHoldEightMiBOfLogitsOrUpTo256RowsWithin64MiB) {
  EXPECT_EQ(lm_head_chunk_rows(128), 16384);
  EXPECT_EQ(lm_head_chunk_rows(8192), 256);
  EXPECT_EQ(lm_head_chunk_rows(50257), 256);   // not 41: 41 rows' products run slower than the whole's
  EXPECT_EQ(lm_head_chunk_rows(151936), 110);  // 110 x 151,936 fp32 logits: 63.8 MiB
  EXPECT_EQ(lm_head_chunk_rows(int64_t{1} << 30), 1);
}

TEST(Plan, ClassifierLogProbabilitiesAreNotQuantized) {
  NetworkLayout l;
  l.layers = {{"head", LayerKind::linear, {{"input", SlotKind::activation, ""}}, "", {}},
              {"loss", LayerKind::cross_entropy, {{"logprobs", SlotKind::activation, ""}}, "", {}}};
  const Plan p = expand_plan_name("quantize-4+swap", l);
  EXPECT_EQ(p.tensor("head", "input").name(), "quantize-4+swap");
  EXPECT_EQ(p.tensor("loss", "logprobs").name(), "swap");
  EXPECT_TRUE(expand_plan_name("adaptive-4", l).tensor("loss", "logprobs").is_keep());
  EXPECT_NE(*why_not(l.layers[1], l.layers[1].slots[0], parse_tensor_strategy("quantize-8", "t")), "");
}

// A module of a TorchScript network: its backward is LibTorch's, so its
// tensors take fixed bits, not adaptive ones.
TEST(Plan, AnImportedModuleTakesQuantizeButNotAdaptiveBits) {
  NetworkLayout l;
  l.layers = {{"block.conv", LayerKind::module, {{"t0", SlotKind::activation, ""}, {"t1", SlotKind::index, ""}}, "", {}}};
  EXPECT_EQ(expand_plan_name("quantize-4", l).tensor("block.conv", "t0").name(), "quantize-4");
  EXPECT_TRUE(expand_plan_name("quantize-4", l).tensor("block.conv", "t1").is_keep());
  EXPECT_TRUE(expand_plan_name("adaptive-4", l).tensor("block.conv", "t0").is_keep());
  EXPECT_EQ(expand_plan_name("adaptive-4+swap", l).tensor("block.conv", "t0").name(), "swap");
  const auto why = why_not(l.layers[0], l.layers[0].slots[0], parse_tensor_strategy("adaptive-4", "t"));
  ASSERT_TRUE(why);
  EXPECT_EQ(why->rfind("adaptive bits need the layer's own backward", 0), 0u) << *why;
  EXPECT_FALSE(why_not(l.layers[0], l.layers[0].slots[0], parse_tensor_strategy("quantize-2+swap", "t")));
}

TEST(Plan, QuantizeTwoKeepsTheHeadsInputAtFourBits) {
  const Plan lm = expand_plan_name("quantize-2+swap", tiny_layout());
  EXPECT_EQ(lm.tensor("lm_head", "input").name(), "quantize-4+swap");
  EXPECT_EQ(lm.tensor("ln_f", "input").name(), "quantize-2+swap");
  NetworkLayout classifier;
  classifier.layers = {{"fc", LayerKind::linear, {{"input", SlotKind::activation, ""}}, "", {}},
                       {"head", LayerKind::linear, {{"input", SlotKind::activation, ""}}, "", {}},
                       {"loss", LayerKind::cross_entropy, {{"logprobs", SlotKind::activation, ""}}, "", {}}};
  const Plan p = expand_plan_name("quantize-2", classifier);
  EXPECT_EQ(p.tensor("head", "input").name(), "quantize-4");
  EXPECT_EQ(p.tensor("fc", "input").name(), "quantize-2");
  EXPECT_EQ(expand_plan_name("quantize-8", classifier).tensor("head", "input").name(), "quantize-8");
}

TEST(Plan, RecomputeAllKeepsSegmentInputsAsAsked) {
  const Plan p = expand_plan_name("recompute-all+quantize-4", tiny_layout());
  EXPECT_EQ(p.segment("blocks.0").name(), "recompute+quantize-4");
  EXPECT_EQ(p.tensors.count("blocks.0.mlp.fc1:input"), 0u);  // nothing is kept inside
  EXPECT_EQ(p.tensor("ln_f", "input").name(), "quantize-4");
  EXPECT_EQ(p.tensor("lm_head", "logprobs").form, Form::recomputed);
  EXPECT_EQ(expand_plan_name("recompute-all", tiny_layout()).tensor("lm_head", "logprobs").form, Form::recomputed);
}

TEST(Plan, InvertWithQuantize) {
  const Plan p = expand_plan_name("quantize-2+invert", tiny_layout());
  EXPECT_EQ(p.tensor("blocks.0.mlp.act", "input").form, Form::inverted);
  EXPECT_EQ(p.tensor("blocks.0.mlp.fc2", "input").name(), "quantize-2");
  const Plan only = expand_plan_name("invert", tiny_layout());
  EXPECT_EQ(only.tensors.size(), 1u);
}

// recompute-attention recomputes an attention core's softmax (the scores
// before it, the context after its dropout), which then makes the dropout's
// mask and the context's probabilities again: those are kept, not stored. A
// mixture's router has a softmax too, which no core recomputes: left as it
// is by the name, refused by a plan file.
TEST(Plan, RecomputeAttentionIsTheCoresSoftmaxAlone) {
  NetworkLayout l;
  const auto act = [](const char* n) { return LayoutSlot{n, SlotKind::activation, ""}; };
  l.layers = {
      {"attn.scores", LayerKind::attention_scores, {act("q"), act("k")}, "", {}},
      {"attn.softmax", LayerKind::softmax, {act("output")}, "", {}},
      {"attn.drop", LayerKind::dropout, {{"mask", SlotKind::mask, ""}}, "", {}},
      {"attn.context", LayerKind::attention_context, {act("probs"), act("v")}, "", {}},
      {"moe.router", LayerKind::linear, {act("input")}, "", {}},
      {"moe.probs", LayerKind::softmax, {act("output")}, "", {}},
  };
  const Plan p = expand_plan_name("recompute-attention+quantize-4", l);
  EXPECT_EQ(p.tensor("attn.softmax", "output").form, Form::recomputed);
  EXPECT_TRUE(p.tensor("attn.drop", "mask").is_keep());
  EXPECT_TRUE(p.tensor("attn.context", "probs").is_keep());
  EXPECT_EQ(p.tensor("attn.context", "v").name(), "quantize-4");
  EXPECT_EQ(p.tensor("moe.probs", "output").name(), "quantize-4");
  EXPECT_TRUE(expand_plan_name("recompute-attention", l).tensor("moe.probs", "output").is_keep());
  const json doc = {{"papaya_plan", 1}, {"tensors", {{"moe.probs:output", "recompute"}}}};
  try {
    parse_plan(doc, l, "net", "plan.json");
    ADD_FAILURE() << "a router's softmax recomputed";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no attention core's softmax"), std::string::npos) << e.what();
  }
  const json layer_key = {{"papaya_plan", 1}, {"tensors", {{"moe", "recompute"}}}};
  EXPECT_TRUE(parse_plan(layer_key, l, "net", "plan.json").tensor("moe.probs", "output").is_keep());
  const json core = {{"papaya_plan", 1}, {"tensors", {{"attn.softmax:output", "recompute"}}}};
  EXPECT_EQ(parse_plan(core, l, "net", "plan.json").tensor("attn.softmax", "output").form, Form::recomputed);
}

TEST(Plan, GlobalNamesArePapayasTable) {
  const auto all = global_plan_names(true);
  EXPECT_EQ(all.size(), 60u);
  EXPECT_EQ(all.front(), "keep");
  EXPECT_NE(std::find(all.begin(), all.end(), "recompute-all+quantize-4+invert+swap"), all.end());
  EXPECT_NE(std::find(all.begin(), all.end(), "recompute-attention+quantize-4"), all.end());
  EXPECT_EQ(global_plan_names(false).size(), 30u);
  EXPECT_FALSE(is_plan_name("recompute-all+recompute-attention"));  // one recompute a plan
  for (const auto& name : all) EXPECT_TRUE(is_plan_name(name)) << name;
  EXPECT_FALSE(is_plan_name("quantize-4+quantize-2"));
  EXPECT_FALSE(is_plan_name("fast"));
}

TEST(Plan, FileWithBaseWildcardsAndSlots) {
  const json doc = json::parse(R"({"papaya_plan": 1, "name": "mixed", "network": "tiny", "batch": 16,
      "base": "quantize-8",
      "tensors": {"blocks.*.mlp.act:input": "invert",
                  "blocks.0.attn.scores:q": {"strategy": "quantize-4", "headwise": true},
                  "blocks.0.mlp": "keep",
                  "lm_head:input": "swap"}})");
  const Plan p = parse_plan(doc, tiny_layout(), "tiny", "mixed.json");
  EXPECT_EQ(p.name, "mixed");
  EXPECT_EQ(*p.batch, 16);
  EXPECT_EQ(p.tensor("blocks.0.mlp.act", "input").form, Form::inverted);
  EXPECT_TRUE(p.tensor("blocks.0.attn.scores", "q").headwise);
  EXPECT_EQ(p.tensor("blocks.0.attn.scores", "k").name(), "quantize-8");
  EXPECT_EQ(p.tensor("lm_head", "input").name(), "swap");
  // The round trip keeps every strategy.
  const Plan again = parse_plan(plan_to_json(p, tiny_layout()), tiny_layout(), "tiny", "again.json");
  EXPECT_EQ(again.tensors, p.tensors);
}

// An encoder called twice, each call a segment of one layer, then a head.
NetworkLayout twice_called_layout() {
  NetworkLayout l;
  l.segments = {"enc.fc", "enc.fc#2"};
  const LayoutSlot input{"input", SlotKind::activation, ""};
  l.layers = {{"enc.fc", LayerKind::linear, {input}, "enc.fc", {}},
              {"enc.fc#2", LayerKind::linear, {input}, "enc.fc#2", {}},
              {"head", LayerKind::linear, {input}, "", {}}};
  return l;
}

TEST(Plan, AFileNamesEachCallOfAModuleCalledTwice) {
  const NetworkLayout layout = twice_called_layout();
  Plan first;
  first.name = "first";
  first.tensors["enc.fc:input"] = parse_tensor_strategy("quantize-4", "t");
  first.segments["enc.fc#2"] = parse_segment_strategy("recompute", "t");
  // The bare name would name both calls: the first is written as itself alone.
  const nlohmann::json doc = plan_to_json(first, layout);
  EXPECT_EQ(doc.at("tensors"), nlohmann::json::parse(R"({"enc.fc#1:input": "quantize-4"})"));
  EXPECT_EQ(doc.at("segments"), nlohmann::json::parse(R"({"enc.fc#2": "recompute"})"));
  const Plan again = parse_plan(doc, layout, "twice", "again.json");
  EXPECT_EQ(again.tensors, first.tensors);
  EXPECT_EQ(again.segments.size(), 1u);
  EXPECT_TRUE(again.segment("enc.fc#2").recompute);
  // A bare name names every call, and one call's key wins over it, in any order.
  const Plan both = parse_plan(nlohmann::json::parse(R"({"papaya_plan": 1, "tensors": {"enc.fc:input": "quantize-8"}})"), layout,
                               "twice", "both.json");
  EXPECT_EQ(both.tensor("enc.fc#2", "input").name(), "quantize-8");
  EXPECT_EQ(both.tensor("enc.fc", "input").name(), "quantize-8");
  const Plan one = parse_plan(
      nlohmann::json::parse(R"({"papaya_plan": 1, "tensors": {"enc.fc#2:input": "keep", "enc.fc:input": "quantize-8"}})"), layout,
      "twice", "one.json");
  EXPECT_EQ(one.tensor("enc.fc", "input").name(), "quantize-8");
  EXPECT_TRUE(one.tensor("enc.fc#2", "input").is_keep());
  EXPECT_EQ(plan_to_json(one, layout).at("tensors"), nlohmann::json::parse(R"({"enc.fc#1:input": "quantize-8"})"));
  const Plan named_first = parse_plan(nlohmann::json::parse(R"({"papaya_plan": 1, "tensors": {"enc.fc#1": "quantize-8"}})"),
                                      layout, "twice", "first.json");
  EXPECT_EQ(named_first.tensors, one.tensors);
}

std::string plan_error(const std::string& text) {
  try {
    parse_plan(json::parse(text), tiny_layout(), "tiny", "p.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Plan, BadPlansNameTheKey) {
  EXPECT_NE(
      plan_error(R"({"papaya_plan": 1, "tensors": {"blocks.9.mlp.fc1": "swap"}})").find("/tensors/blocks.9.mlp.fc1: no saved"),
      std::string::npos);
  EXPECT_NE(plan_error(R"({"papaya_plan": 1, "tensors": {"blocks.0.mlp.fc1:input": "invert"}})").find("invert applies"),
            std::string::npos);
  EXPECT_NE(plan_error(R"({"papaya_plan": 1, "tensors": {"blocks.0.mlp.fc1:output": "swap"}})").find("saves no 'output'"),
            std::string::npos);
  EXPECT_NE(plan_error(R"({"papaya_plan": 1, "tensors": {"lm_head:logprobs": "quantize-4"}})").find("log-probabilities"),
            std::string::npos);
  EXPECT_NE(plan_error(R"({"papaya_plan": 1, "network": "other"})").find("made for other"), std::string::npos);
  EXPECT_NE(
      plan_error(R"({"papaya_plan": 1, "segments": {"blocks.0": "recompute"}, "tensors": {"blocks.0.mlp.fc1:input": "swap"}})")
          .find("inside the recomputed segment"),
      std::string::npos);
  EXPECT_NE(plan_error(R"({"papaya_plan": 1, "segments": {"layer1.*": "recompute"}})").find("no segment"), std::string::npos);
  EXPECT_NE(plan_error(R"({"papaya_plan": 2})").find("/papaya_plan"), std::string::npos);
  EXPECT_NE(plan_error(R"({"papaya_plan": 1, "tensors": {"blocks.0.mlp.fc1": {"strategy": "swap", "group": 64}}})").find("group"),
            std::string::npos);
}

TEST(Plan, UnknownNameOrFile) {
  EXPECT_THROW(load_plan("fastest", tiny_layout(), "tiny"), InputError);
  EXPECT_NO_THROW(load_plan("recompute-all+quantize-2+invert+swap", tiny_layout(), "tiny"));
}

}  // namespace
}  // namespace papaya::model
