// A layout written as plan and recommend write it reads back the same, and
// a layout document that is not one is refused naming the key or the rule.
#include "model/parallel/parallel_layout_json.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/support/input_error.h"

namespace papaya::model {
namespace {

using test_support::input_error_of;

// Every setting away from its default.
ParallelLayout every_setting() {
  ParallelLayout l;
  l.tensor = 2, l.sequence = true, l.pipeline = 2, l.virtual_stages = 2, l.context = 2, l.expert = 4, l.data = 2;
  l.zero_stage = 1, l.offload_optimizer = true, l.micro_batch = 3, l.micro_batches = 4;
  return l;
}

TEST(LayoutJson, ALayoutReadsBackAsWritten) {
  const ParallelLayout l = every_setting();
  nlohmann::json doc = parallel_layout_json(l);
  EXPECT_EQ(doc["label"], l.label());
  doc["tokens_per_s"] = 1.5;  // an estimate's keys beside it are passed by
  const ParallelLayout back = parallel_layout_from_json(doc, "f.json");
  EXPECT_EQ(back.label(), l.label());
  EXPECT_EQ(back.virtual_stages, 2);
  EXPECT_EQ(back.expert, 4);
  EXPECT_TRUE(back.offload_optimizer);
  EXPECT_EQ(parallel_layout_json(back), parallel_layout_json(l));
}

TEST(LayoutJson, AWrongLayoutNamesTheKeyOrTheRule) {
  const auto error = [](const nlohmann::json& doc) { return input_error_of([&] { parallel_layout_from_json(doc, "f.json"); }); };
  nlohmann::json doc = parallel_layout_json(every_setting());
  EXPECT_EQ(error(doc), "");
  nlohmann::json broken = doc;
  broken["tensor"] = 0;
  EXPECT_EQ(error(broken).rfind("f.json: /tensor: ", 0), 0u) << error(broken);
  broken = doc;
  broken.erase("micro_batches");
  EXPECT_NE(error(broken).find("micro_batches"), std::string::npos) << error(broken);
  broken = doc;
  broken["zero"] = "1";
  EXPECT_EQ(error(broken).rfind("f.json: /zero: ", 0), 0u) << error(broken);
  broken = doc;
  broken["tensor"] = 1;
  EXPECT_EQ(error(broken), "f.json: layout: sequence parallelism needs tensor parallelism above 1");
}

}  // namespace
}  // namespace papaya::model
