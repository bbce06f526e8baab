#pragma once
// Checks on files a command will write, made before its long work.
#include <string>

namespace papaya::cli {

// Throws InputError ("--out PATH: ...", or `option` for --out) if `path` is a
// folder or its folder cannot be written, so that a command fails before
// measuring, not after.
void check_writable(const std::string& path, const std::string& option = "--out");

}  // namespace papaya::cli
