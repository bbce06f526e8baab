#pragma once
// A one-line progress bar on stderr, drawn only when stderr is a terminal.
#include <chrono>
#include <optional>
#include <string>

#include "workflow/reporter.h"

namespace papaya::cli {

class Progress {
 public:
  explicit Progress(std::string label);
  ~Progress();  // ends the line
  void update(int done, int total, const std::string& note = "");

 private:
  std::string label_;
  bool active_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
};

// The pipeline's stages as progress bars, its notices and warnings as
// "papaya: ..." lines on stderr.
class ProgressReporter : public workflow::Reporter {
 public:
  void begin(const std::string& stage) override;
  void update(int done, int total, const std::string& note) override;
  void end() override;
  void notice(const std::string& message) override;
  void warning(const std::string& message) override;

 private:
  std::optional<Progress> bar_;
};

}  // namespace papaya::cli
