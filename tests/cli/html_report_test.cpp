// `papaya predict --html`: the report opened in a real browser (Debian's
// headless Chromium, which the test set-up installs), its page rendered
// without a console message, the peak and the layer it shows for each plan
// the JSON's.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/run_papaya.h"

namespace papaya::testing {
namespace {

using nlohmann::json;

std::string browser() {
  for (const char* name : {"/usr/bin/chromium-headless-shell", "/usr/bin/chromium"}) {
    if (std::filesystem::exists(name)) return name;
  }
  return "";
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Row {
  std::string plan, peak_at;
  std::string tensors;  // the largest saved there: "blocks.0.attn.qkv:input (quantize-4) 12.00 KiB, ..."
  double peak_bytes = 0;
};

// `page` rendered by `chromium`: its script run to its end (it marks the
// body), nothing said on the console; each plan's row of peaks.
std::vector<Row> rendered(const std::string& chromium, const TempDir& dir, const std::string& page) {
  const std::string command = chromium + " --no-sandbox --disable-gpu --enable-logging=stderr --v=0 --virtual-time-budget=5000 " +
                              "--dump-dom file://" + dir.path(page) + " >" + dir.path("dom.html") + " 2>" +
                              dir.path("browser.log");
  EXPECT_EQ(std::system(command.c_str()), 0) << read(dir.path("browser.log"));
  const std::string log = read(dir.path("browser.log")), dom = read(dir.path("dom.html"));
  EXPECT_EQ(log.find("CONSOLE"), std::string::npos) << page << ": " << log;
  EXPECT_NE(dom.find("data-rendered=\"yes\""), std::string::npos) << page << ": " << dom.substr(0, 2000);
  const std::regex row(
      R"re(<tr><td>([^<]+)</td><td id="peak-bytes-\d+" data-bytes="([0-9.e+]+)">[^<]+</td><td id="peak-at-\d+">([^<]+)</td><td id="peak-tensors-\d+">([^<]*)</td></tr>)re");
  std::vector<Row> rows;
  for (std::sregex_iterator it(dom.begin(), dom.end(), row), end; it != end; ++it) {
    rows.push_back({(*it)[1], (*it)[3], (*it)[4], std::stod((*it)[2])});
  }
  return rows;
}

// predict's, plan's, recommend's and validate's reports: keep's peak and the
// chosen plan's, each where it is, as --json says.
TEST(HtmlReport, TheBrowserShowsThePeaksOfTheJson) {
  const std::string chromium = browser();
  if (chromium.empty() || !std::filesystem::exists("/usr/share/javascript/chart.js/chart.min.js")) {
    GTEST_SKIP() << "no headless Chromium or Chart.js (scripts/setup.sh installs them)";
  }
  const TempDir dir("papaya-html");
  const std::string model_file = profiled_model(dir, "llama-tiny");
  ASSERT_FALSE(::testing::Test::HasFailure());
  const Outcome predicted = run_papaya("predict " + model_file + " --batch 4 --json --html " + dir.path("predict.html"));
  ASSERT_EQ(predicted.code, 0) << predicted.err;
  const std::vector<Row> rows = rendered(chromium, dir, "predict.html");
  EXPECT_EQ(read(dir.path("predict.html")).rfind("<!DOCTYPE html>\n<html lang=\"en\"><head>", 0), 0u) << "the page's top";
  ASSERT_EQ(rows.size(), 2u);  // keep and the plan chosen
  for (const Row& r : rows) {
    bool found = false;
    for (const auto& entry : json::parse(predicted.out)) {
      if (entry["strategy"] != r.plan) continue;
      found = true;
      EXPECT_DOUBLE_EQ(r.peak_bytes, entry["peak_bytes"].get<double>()) << r.plan;
      EXPECT_EQ(r.peak_at, entry["peak_at"].get<std::string>()) << r.plan;
    }
    EXPECT_TRUE(found) << r.plan;
    EXPECT_NE(r.tensors.find("blocks."), std::string::npos) << r.plan << ": " << r.tensors;
  }
  // Keep stores every tensor raw: its three largest at its peak are.
  const std::regex raw(R"re(^([^,]+ \(raw\) [^,]+)(, [^,]+ \(raw\) [^,]+){2}$)re");
  EXPECT_TRUE(std::regex_match(rows[0].tensors, raw)) << rows[0].tensors;
  for (const std::string& command : {"plan " + model_file + " --budget 2.5MiB",
                                     "recommend --network mlp-tiny --budget 64MiB --out " + dir.path("plan.json")}) {
    const Outcome planned = run_papaya(command + " --json --html " + dir.path("plan.html"));
    ASSERT_EQ(planned.code, 0) << planned.err;
    const json doc = json::parse(planned.out);
    const json& chosen = doc;  // the chosen plan's figures
    const std::vector<Row> shown = rendered(chromium, dir, "plan.html");
    ASSERT_EQ(shown.size(), 2u) << command;
    EXPECT_EQ(shown[0].plan, "keep");
    EXPECT_DOUBLE_EQ(shown[1].peak_bytes, chosen["peak_bytes"].get<double>()) << command;
    EXPECT_EQ(shown[1].peak_at, chosen["peak_at"].get<std::string>()) << command;
  }
  // validate's: the first plan's step at the largest batch as predicted, beside the measured rows.
  const Outcome validated = run_papaya(
      "validate --network mlp-tiny --batches 4,8 --plans keep,quantize-4 --steps 3 --json --html " + dir.path("validate.html"));
  ASSERT_EQ(validated.code, 0) << validated.err;
  const std::vector<Row> checked = rendered(chromium, dir, "validate.html");
  ASSERT_EQ(checked.size(), 2u);
  const json doc = json::parse(validated.out);  // a range-for over a temporary's member reads freed memory
  for (const auto& row : doc["rows"]) {
    if (row["batch"] != 8) continue;
    const Row& shown = row["plan"] == "keep" ? checked[0] : checked[1];
    EXPECT_EQ(shown.plan, row["plan"].get<std::string>());
    EXPECT_DOUBLE_EQ(shown.peak_bytes, row["predicted_peak_bytes"].get<double>()) << shown.plan;
  }
  expect_input_error("predict " + model_file + " --batch 4 --html /nonexistent/folder/r.html", "--html");
}

// limits' page of layouts: rendered, a chart each for tokens/s, time and
// cost, and a row a GPU type with the layout --json gives it.
TEST(HtmlReport, TheLimitsPageShowsEachGpusLayout) {
  const std::string chromium = browser();
  if (chromium.empty() || !std::filesystem::exists("/usr/share/javascript/chart.js/chart.min.js")) {
    GTEST_SKIP() << "no headless Chromium or Chart.js (scripts/setup.sh installs them)";
  }
  const TempDir dir("papaya-html");
  const std::string asked =
      "limits --network llama-tiny --hardware H100-SXM-80GB,T4 --gpus 4 --gpus-per-node 4 --tokens 1e9 "
      "--price T4=0.35 --json --html " +
      dir.path("limits.html");
  const Outcome run = run_papaya(asked);
  ASSERT_EQ(run.code, 0) << run.err;
  rendered(chromium, dir, "limits.html");
  EXPECT_EQ(read(dir.path("limits.html")).rfind("<!DOCTYPE html>\n<html lang=\"en\"><head>", 0), 0u) << "the page's top";
  const std::string dom = read(dir.path("dom.html"));
  for (const char* chart : {"id=\"bar-0\"", "id=\"bar-1\"", "id=\"bar-2\""})
    EXPECT_NE(dom.find(chart), std::string::npos) << chart;
  for (const json& entry : json::parse(run.out)) {
    const std::string row = "<tr><td>" + entry["hardware"].get<std::string>() + "</td>";
    const size_t at = dom.find(row);
    ASSERT_NE(at, std::string::npos) << row;
    EXPECT_NE(dom.find("<td>" + entry["best"]["label"].get<std::string>() + "</td>", at), std::string::npos) << row;
  }
  EXPECT_NE(dom.find("cheapest: T4"), std::string::npos);
  expect_input_error("limits m.json --hardware T4 --html " + dir.path("batches.html"), "draws the layouts of --tokens");
}

}  // namespace
}  // namespace papaya::testing
