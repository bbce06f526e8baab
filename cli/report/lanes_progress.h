#pragma once
// Work running on several threads at once (`limits`' searches, one a
// target), reported on one line of stderr: a label, then each lane's stage
// and latest note side by side, cut to the terminal's width, drawn only
// when stderr is a terminal; notices and warnings as "papaya: ..." lines
// above it.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "workflow/reporter.h"

namespace papaya::cli {

class LanesProgress {
 public:
  LanesProgress(std::string label, size_t lanes);
  ~LanesProgress();  // clears the line
  LanesProgress(const LanesProgress&) = delete;
  LanesProgress& operator=(const LanesProgress&) = delete;
  // What lane k reports; safe to use from its own thread.
  workflow::Reporter& lane(size_t k);

 private:
  class Lane;
  void set(size_t k, std::string text);
  void print(const std::string& line);
  void draw();  // with mutex_ held
  std::mutex mutex_;
  std::string label_;
  std::vector<std::string> texts_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  bool active_;
  bool drawn_ = false;
};

}  // namespace papaya::cli
