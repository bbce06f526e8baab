#include "model/catalog/input_spec.h"

#include <gtest/gtest.h>

#include "model/error.h"

namespace papaya::model {
namespace {

TEST(InputSpec, ParsesDtypeShapeAndBound) {
  const InputSpec image = parse_input_spec("float32[B,3,224,224]", "--input");
  EXPECT_EQ(image.dtype, "float32");
  EXPECT_EQ(image.shape(8), (std::vector<int64_t>{8, 3, 224, 224}));
  EXPECT_FALSE(image.below);
  EXPECT_FALSE(image.integral());
  EXPECT_EQ(image.text(), "float32[B,3,224,224]");

  const InputSpec tokens = parse_input_spec("int64[128,B]<50257", "--input");
  EXPECT_EQ(tokens.shape(4), (std::vector<int64_t>{128, 4}));
  ASSERT_TRUE(tokens.below);
  EXPECT_EQ(*tokens.below, 50257);
  EXPECT_EQ(tokens.text(), "int64[128,B]<50257");
}

// Each bad spec names where it came from, the text, and what is wrong.
TEST(InputSpec, BadSpecsSayWhatIsWrong) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"float32", "no [shape]"},
      {"float[B,3]", "unknown dtype 'float'"},
      {"float32[3,224]", "appears 0 times"},
      {"float32[B,B]", "appears 2 times"},
      {"float32[B,0]", "dimension '0'"},
      {"float32[B,-3]", "dimension '-3'"},
      {"float32[B,]", "dimension ''"},
      {"float32[B,3]<10", "int64 and int32 inputs only"},
      {"int64[B,3]<", "only <N>"},
      {"int64[B,3]x", "only <N>"},
      {"int64[B,99999999999999999999]", "dimension '99999999999999999999'"},
  };
  for (const auto& [text, why] : cases) {
    try {
      parse_input_spec(text, "model.pt: papaya.json /inputs/0");
      ADD_FAILURE() << text << ": no error";
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("model.pt: papaya.json /inputs/0: '" + text + "': ", 0), 0u) << what;
      EXPECT_NE(what.find(why), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace papaya::model
