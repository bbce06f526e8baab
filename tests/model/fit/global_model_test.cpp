#include "model/fit/global_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "model/error.h"
#include "model/fit/measurements.h"
#include "model/json_file.h"

namespace papaya::model {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("papaya-global-model-" + name)).string();
}

// Equal documents, numbers to 1e-12 relative (the floor is stored as a + c).
void expect_same(const nlohmann::json& a, const nlohmann::json& b, const std::string& where = "") {
  if (a.is_number() && b.is_number()) {
    EXPECT_NEAR(a.get<double>(), b.get<double>(), 1e-12 * std::fabs(a.get<double>())) << where;
  } else if (a.is_structured() && b.is_structured() && a.type() == b.type() && a.size() == b.size()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      const std::string key = a.is_object() ? it.key() : std::to_string(std::distance(a.begin(), it));
      expect_same(*it, a.is_object() ? b.at(it.key()) : b.at(std::stoul(key)), where + "/" + key);
    }
  } else {
    EXPECT_EQ(a, b) << where;
  }
}

GlobalModel bench_model() {
  return fit_global(read_measurements(std::string(PAPAYA_SOURCE_DIR) + "/bench/data/papaya-v100.csv"), std::nullopt);
}

TEST(GlobalModel, WrittenAndReadBackUnchanged) {
  const GlobalModel fitted = bench_model();
  const std::string path = temp_path("roundtrip.json");
  write_json_file(path, to_json(fitted));
  const GlobalModel loaded = load_global_model(path);
  std::remove(path.c_str());

  EXPECT_EQ(loaded.source, fitted.source);
  EXPECT_FALSE(loaded.budget_bytes);
  ASSERT_EQ(loaded.series.size(), fitted.series.size());
  expect_same(to_json(loaded), to_json(fitted));
  for (size_t i = 0; i < fitted.series.size(); ++i) {
    const auto& a = fitted.series[i];
    const auto& b = loaded.series[i];
    EXPECT_EQ(a.memory.has_value(), b.memory.has_value()) << a.network << " " << a.strategy;
    if (a.memory) {
      EXPECT_NEAR(a.memory->curve.floor, b.memory->curve.floor, 1e-12 * a.memory->curve.floor_level());
    }
    EXPECT_EQ(a.verdict.has_value(), b.verdict.has_value());
    if (a.time_linear) {
      EXPECT_DOUBLE_EQ(a.iteration_s(32), b.iteration_s(32));
    }
  }
}

TEST(GlobalModel, InvalidDocumentsNameFileAndPath) {
  const std::string path = temp_path("invalid.json");
  nlohmann::json doc = to_json(bench_model());
  doc["series"][2]["max_batch"] = "many";
  write_json_file(path, doc);
  try {
    load_global_model(path);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": /series/2/max_batch"), std::string::npos) << e.what();
  }

  doc = to_json(bench_model());
  doc["series"][0]["beta_bytes"] = nullptr;  // alpha without beta
  write_json_file(path, doc);
  try {
    load_global_model(path);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/series/0/alpha_bytes_per_sample"), std::string::npos) << e.what();
  }

  doc["kind"] = "per-layer";
  write_json_file(path, doc);
  EXPECT_THROW(load_global_model(path), InputError);
  std::remove(path.c_str());
  EXPECT_THROW(load_global_model(path), InputError);
}

// Only a document whose top-level /kind is "global" is one, wherever that key
// stands, and a damaged document is none (its loader names the damage).
TEST(GlobalModel, KindReadFromTheTopLevelOnly) {
  const std::string path = temp_path("kind.json");
  const auto kind_of = [&](const std::string& text) {
    write_text_file(path, text);
    return is_global_model_file(path);
  };
  EXPECT_TRUE(kind_of(to_json(bench_model()).dump()));
  EXPECT_TRUE(kind_of(R"({"a": [1, {"kind": "layers"}], "b": {"c": null}, "kind": "global"})"));
  EXPECT_TRUE(kind_of(R"({"kind": "global", "rest": [1, 2)"));  // decided before the damage
  EXPECT_FALSE(kind_of(R"({"kind": "layers", "layers": [{"kind": "global"}]})"));
  EXPECT_FALSE(kind_of(R"({"nested": {"kind": "global"}})"));
  EXPECT_FALSE(kind_of(R"({"kind": ["global"]})"));
  EXPECT_FALSE(kind_of(R"({"kind": {"global": 1}})"));
  EXPECT_FALSE(kind_of(R"({"kind": 1})"));
  EXPECT_FALSE(kind_of(R"([{"kind": "global"}])"));
  EXPECT_FALSE(kind_of(R"("global")"));
  EXPECT_FALSE(kind_of(R"({"papaya_model": 1, "kind")"));
  EXPECT_FALSE(kind_of(""));
  std::remove(path.c_str());
  EXPECT_THROW(is_global_model_file(path), InputError);
}

}  // namespace
}  // namespace papaya::model
