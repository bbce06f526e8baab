// The one shape of every command (cli/report/report.h): a result shown as text or,
// with --json, as one JSON document.
#include "cli/report/report.h"

#include <gtest/gtest.h>

#include <ostream>

namespace papaya::cli {
namespace {

struct Sample {
  int value = 0;
};

void to_json(nlohmann::json& out, const Sample& s) { out = {{"value", s.value}}; }
void print_text(std::ostream& out, const Sample& s) { out << "value: " << s.value << "\n"; }

// What `demo ARGS` prints on stdout: a headline, then Sample{7} shown.
std::string run_demo(const std::string& args) {
  CLI::App app;
  auto* cmd = app.add_subcommand("demo");
  const auto output = add_output_options(cmd);
  cmd->callback([output] {
    output->headline("working on it\n");
    show(Sample{7}, *output);
  });
  ::testing::internal::CaptureStdout();
  app.parse("demo " + args, false);
  return ::testing::internal::GetCapturedStdout();
}

TEST(Report, TextForPeopleJsonForScripts) {
  EXPECT_EQ(run_demo(""), "working on it\nvalue: 7\n");
  const std::string json = run_demo("--json");
  EXPECT_EQ(nlohmann::json::parse(json), (nlohmann::json{{"value", 7}})) << json;
  EXPECT_EQ(json.find("working on it"), std::string::npos);
}

}  // namespace
}  // namespace papaya::cli
