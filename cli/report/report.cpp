#include "cli/report/report.h"

namespace papaya::cli {

void Output::headline(const std::string& text) const {
  if (!json) std::cout << text << std::flush;
}

std::shared_ptr<Output> add_output_options(CLI::App* cmd, const std::string& json_help) {
  auto output = std::make_shared<Output>();
  cmd->add_flag("--json", output->json, json_help);
  return output;
}

}  // namespace papaya::cli
