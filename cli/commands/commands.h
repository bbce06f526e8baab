#pragma once
// Each subcommand registers itself on the app (one file each).
#include <CLI/CLI.hpp>

namespace papaya::cli {

void register_networks(CLI::App& app);
void register_import_hf(CLI::App& app);
void register_hardware(CLI::App& app);
void register_calibrate(CLI::App& app);
void register_inspect(CLI::App& app);
void register_train(CLI::App& app);
void register_profile(CLI::App& app);
void register_fit(CLI::App& app);
void register_predict(CLI::App& app);
void register_limits(CLI::App& app);
void register_plan(CLI::App& app);
void register_recommend(CLI::App& app);
void register_validate(CLI::App& app);

// "papaya 0.1.0 (LibTorch 1.13.0, CPU only)"
std::string version_string();

}  // namespace papaya::cli
