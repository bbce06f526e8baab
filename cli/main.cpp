// papaya: profile a network, model its memory and throughput under every
// memory optimization, plan under a budget, and train with the plan.
#include <c10/util/Exception.h>

#include <iostream>

#include "cli/commands/commands.h"
#include "cli/process/denormals.h"
#include "cli/process/stop_signal.h"
#include "model/error.h"
#include "profiler/out_of_memory.h"

namespace {

int fail(const std::string& message) {
  std::cerr << "papaya: error: " << papaya::printable_line(message) << "\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  papaya::cli::flush_denormals();
  CLI::App app{"papaya: which memory optimizations to train with, at what batch size, how fast — and training with them."};
  app.set_version_flag("--version", papaya::cli::version_string());
  app.require_subcommand(1);
  app.fallthrough();
  papaya::cli::register_networks(app);
  papaya::cli::register_import_hf(app);
  papaya::cli::register_hardware(app);
  papaya::cli::register_calibrate(app);
  papaya::cli::register_inspect(app);
  papaya::cli::register_train(app);
  papaya::cli::register_profile(app);
  papaya::cli::register_fit(app);
  papaya::cli::register_predict(app);
  papaya::cli::register_limits(app);
  papaya::cli::register_plan(app);
  papaya::cli::register_recommend(app);
  papaya::cli::register_validate(app);
  if (argc > 1 && argv[1][0] != '-') {
    std::string known;
    bool found = false;
    for (const auto* sub : app.get_subcommands({})) {
      known += (known.empty() ? "" : ", ") + sub->get_name();
      found = found || sub->check_name(argv[1]);
    }
    if (!found) return fail("unknown command '" + std::string(argv[1]) + "' (commands: " + known + ")");
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(std::string(e.what()) + " (see papaya --help)");
  } catch (const papaya::InputError& e) {
    return fail(e.what());
  } catch (const papaya::cli::Stopped& e) {
    std::cerr << "papaya: " << e.what() << "\n";
    return e.exit_code();
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    const std::string line = what.substr(0, what.find('\n'));
    return fail((papaya::profiler::is_out_of_memory(e) ? "out of memory: " : "internal error, please report it: ") + line);
  } catch (const std::bad_alloc&) {
    return fail("out of memory");
  } catch (const std::exception& e) {  // a fault of papaya's own: said in one line, never an abort
    const std::string what = e.what();
    return fail("internal error, please report it: " + what.substr(0, what.find('\n')));
  }
  return 0;
}
