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

TEST(HtmlReport, TheBrowserShowsThePeaksOfTheJson) {
  const std::string chromium = browser();
  if (chromium.empty() || !std::filesystem::exists("/usr/share/javascript/chart.js/chart.min.js")) {
    GTEST_SKIP() << "no headless Chromium or Chart.js (scripts/setup.sh installs them)";
  }
  const TempDir dir("papaya-html");
  ASSERT_EQ(run_papaya("profile --network llama-tiny --batch 1,2,4 --out " + dir.path("p.json")).code, 0);
  ASSERT_EQ(run_papaya("fit " + dir.path("p.json") + " --out " + dir.path("m.json")).code, 0);
  const Outcome predicted = run_papaya("predict " + dir.path("m.json") + " --batch 4 --json");
  ASSERT_EQ(predicted.code, 0) << predicted.err;
  const Outcome report = run_papaya("predict " + dir.path("m.json") + " --batch 4 --html " + dir.path("report.html"));
  ASSERT_EQ(report.code, 0) << report.err;
  // Rendered, its script run to its end (it marks the body), with nothing said on the console.
  const std::string command = chromium + " --no-sandbox --disable-gpu --enable-logging=stderr --v=0 --virtual-time-budget=5000 " +
                              "--dump-dom file://" + dir.path("report.html") + " >" + dir.path("dom.html") + " 2>" +
                              dir.path("browser.log");
  ASSERT_EQ(std::system(command.c_str()), 0) << read(dir.path("browser.log"));
  const std::string log = read(dir.path("browser.log")), dom = read(dir.path("dom.html"));
  EXPECT_EQ(log.find("CONSOLE"), std::string::npos) << log;
  EXPECT_NE(dom.find("data-rendered=\"yes\""), std::string::npos) << dom.substr(0, 2000);
  // Each plan's row: its name, its peak in bytes (and formatted), the point it is at.
  const std::regex row(R"re(<tr><td>([^<]+)</td><td id="peak-bytes-\d+" data-bytes="([0-9.e+]+)">[^<]+</td><td id="peak-at-\d+">([^<]+)</td></tr>)re");
  int rows = 0;
  for (std::sregex_iterator it(dom.begin(), dom.end(), row), end; it != end; ++it, ++rows) {
    const std::string plan = (*it)[1];
    bool found = false;
    for (const auto& entry : json::parse(predicted.out)) {
      if (entry["strategy"] != plan) continue;
      found = true;
      EXPECT_DOUBLE_EQ(std::stod((*it)[2]), entry["peak_bytes"].get<double>()) << plan;
      EXPECT_EQ((*it)[3], entry["peak_at"].get<std::string>()) << plan;
    }
    EXPECT_TRUE(found) << plan;
  }
  EXPECT_EQ(rows, 2);  // keep and the plan chosen
  expect_input_error("predict " + dir.path("m.json") + " --batch 4 --html /nonexistent/folder/r.html", "--html");
}

}  // namespace
}  // namespace papaya::testing
