#pragma once
// A one-line progress bar on stderr, drawn only when stderr is a terminal.
#include <chrono>
#include <string>

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

}  // namespace papaya::cli
