#pragma once
// Runs the papaya binary for end-to-end tests.
#include <filesystem>
#include <string>

namespace papaya::testing {

struct Outcome {
  int code = -1;
  std::string out, err;
};

// `args` is passed through the shell after the binary's path.
Outcome run_papaya(const std::string& args);

// A fresh folder under the system's temporary one, removed with everything in
// it when the object goes.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

// Runs papaya with `args` and expects bad input's outcome: exit code 2 and
// one line on stderr, "papaya: error: ..." containing `needle`.
void expect_input_error(const std::string& args, const std::string& needle);

// `network` profiled at batches 1, 2 and 4 (into dir's p.json) and fitted:
// the model file, dir's m.json; a test failure where either command fails.
std::string profiled_model(const TempDir& dir, const std::string& network);

// Whether this papaya has Gloo's collectives (a build without libgloo-dev's
// headers has none to test).
bool built_with_gloo();

}  // namespace papaya::testing
