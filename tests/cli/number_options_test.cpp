// Every numeric option of every command, given 0, -1 and a non-number:
// accepted (the value is allowed), or refused in one short line that names
// the option and what it allows ("--batch: must be a whole number of at
// least 1 (got '0')"), never CLI11's own wording (a range up to DBL_MAX's
// 309 digits). Parsed in this process, each with --help, so that no command runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>

#include "cli/commands/commands.h"

namespace papaya::cli {
namespace {

std::unique_ptr<CLI::App> papaya_app() {
  auto app = std::make_unique<CLI::App>("papaya");
  app->require_subcommand(1);
  for (const auto& register_command :
       {register_networks, register_import_hf, register_hardware, register_inspect, register_train, register_profile,
        register_fit, register_predict, register_limits, register_plan, register_recommend, register_validate}) {
    register_command(*app);
  }
  return app;
}

bool numeric(const CLI::Option& option) {
  const std::string type = option.get_type_name();
  return type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0 || type.rfind("FLOAT", 0) == 0;
}

TEST(NumberOptions, EveryOneSaysWhatItAllows) {
  const auto app = papaya_app();
  int options = 0;
  for (CLI::App* command : app->get_subcommands({})) {
    for (const CLI::Option* option : command->get_options()) {
      if (!numeric(*option) || option->get_lnames().empty()) continue;
      ++options;
      const std::string name = "--" + option->get_lnames().front();
      for (const std::string value : {"0", "-1", "abc"}) {
        const std::string line = command->get_name() + " " + name + " " + value;
        std::string refused;
        try {
          papaya_app()->parse(line + " --help", false);
        } catch (const CLI::CallForHelp&) {
          // allowed: it came to --help
        } catch (const CLI::ParseError& e) {
          refused = e.what();
        }
        if (value != "0") EXPECT_FALSE(refused.empty()) << line << ": accepted";
        if (refused.empty()) continue;
        EXPECT_EQ(refused.rfind(name + ": must be ", 0), 0u) << line << ": " << refused;
        EXPECT_TRUE(refused.find("at least") != std::string::npos || refused.find("above") != std::string::npos ||
                    refused.find(" from ") != std::string::npos)
            << line << ": " << refused;
        EXPECT_NE(refused.find("(got '" + value + "')"), std::string::npos) << line << ": " << refused;
        EXPECT_LT(refused.size(), 120u) << line << ": " << refused;
        EXPECT_EQ(std::count(refused.begin(), refused.end(), '\n'), 0) << line;
      }
    }
  }
  EXPECT_GT(options, 50);  // the commands' numeric options were found
}

}  // namespace
}  // namespace papaya::cli
