#pragma once
// Each subcommand registers itself on the app (one file each).
#include <CLI/CLI.hpp>

namespace papaya::cli {

void register_networks(CLI::App& app);
void register_hardware(CLI::App& app);
void register_train(CLI::App& app);
void register_fit(CLI::App& app);
void register_predict(CLI::App& app);
void register_limits(CLI::App& app);

// papaya fit PROFILE --out FILE: fits the layer model, writes it, reports its fit.
void run_profile_fit(const std::string& profile_path, const std::string& out_path, bool json);

// "papaya 0.1.0 (LibTorch 1.13.0, CPU only)"
std::string version_string();

}  // namespace papaya::cli
