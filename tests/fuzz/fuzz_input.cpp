#include "tests/fuzz/fuzz_input.h"

#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace papaya::fuzz {
namespace fs = std::filesystem;

const fs::path& scratch_dir() {
  static const fs::path dir = [] {
    const fs::path d = fs::temp_directory_path() / ("papaya-fuzz-" + std::to_string(getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

std::string input_file(const uint8_t* data, size_t size, const std::string& name) {
  const fs::path path = scratch_dir() / name;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), size);
  return path.string();
}

void check_one_line(const std::string& message) {
  if (!message.empty() && message.find('\n') == std::string::npos) return;
  std::fprintf(stderr, "InputError message is not one non-empty line: [%s]\n", message.c_str());
  std::abort();
}

}  // namespace papaya::fuzz
