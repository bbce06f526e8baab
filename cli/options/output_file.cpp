#include "cli/options/output_file.h"

#include <unistd.h>

#include <filesystem>

#include "model/error.h"

namespace papaya::cli {

void check_writable(const std::string& path, const std::string& option) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (fs::is_directory(target)) throw InputError(option + " " + path + ": is a folder; name a file");
  if (!fs::is_directory(folder) || access(folder.c_str(), W_OK) != 0) {
    throw InputError(option + " " + path + ": cannot write in " + folder.string());
  }
}

}  // namespace papaya::cli
