#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/report/plot.h"
#include "model/error.h"

namespace papaya::cli {
namespace {

std::vector<PlotPanel> panels() {
  PlotSeries keep{"keep", {{1, 1.0}, {8, 4.0}, {32, 13.0}}, {{1, 1.05}, {8, 3.9}}};
  PlotSeries q4{"quantize-4", {{1, 0.8}, {32, 4.0}}, {}};
  PlotPanel memory{"peak memory", "GiB", {keep, q4}, 12.0, "budget 12 GiB"};
  PlotPanel speed{"throughput", "samples/s", {{"quantize-4", {{1, 10}, {32, 200}}, {{4, 55}}}}, std::nullopt, ""};
  return {memory, speed};
}

std::string slurp(const std::filesystem::path& path) {
  std::stringstream s;
  s << std::ifstream(path, std::ios::binary).rdbuf();
  return s.str();
}

TEST(Plot, WritesSvgWithEverySeries) {
  const auto path = std::filesystem::temp_directory_path() / "papaya-plot-test.svg";
  write_plot(path.string(), "gpt-tiny on cpu", panels());
  const std::string svg = slurp(path);
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  for (const char* text : {"quantize-4", "keep", "budget 12 GiB", "peak memory", "throughput", "gpt-tiny on cpu"}) {
    EXPECT_NE(svg.find(text), std::string::npos) << text;
  }
  std::filesystem::remove(path);
}

TEST(Plot, WritesPng) {
  const auto path = std::filesystem::temp_directory_path() / "papaya-plot-test.png";
  write_plot(path.string(), "t", panels());
  EXPECT_EQ(slurp(path).substr(1, 3), "PNG");
  std::filesystem::remove(path);
}

TEST(Plot, RejectsOtherFormatsAndLeavesNothing) {
  const auto path = std::filesystem::temp_directory_path() / "papaya-plot-test.gif";
  EXPECT_THROW(write_plot(path.string(), "t", panels()), InputError);
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace papaya::cli
