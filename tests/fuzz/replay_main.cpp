// The harnesses without libFuzzer: each seed of the folders (or files) given
// is run once through LLVMFuzzerTestOneInput, as libFuzzer would, so that
// every build checks that each seed loads or fails with one-line InputError
// (a ctest case per loader). A crash or another exception ends the run.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> seeds;
  for (int i = 1; i < argc; ++i) {
    if (fs::is_directory(argv[i])) {
      for (const auto& entry : fs::directory_iterator(argv[i])) {
        if (entry.is_regular_file()) seeds.push_back(entry.path());
      }
    } else {
      seeds.emplace_back(argv[i]);
    }
  }
  if (seeds.empty()) {
    std::fprintf(stderr, "usage: %s SEED_FOLDER_OR_FILE...: no seed found\n", argv[0]);
    return 2;
  }
  for (const auto& path : seeds) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "%s: unreadable\n", path.c_str());
      return 2;
    }
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("%zu seeds ran\n", seeds.size());
  return 0;
}
