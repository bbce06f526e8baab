#pragma once
// Work running on several threads at once (`limits`' searches, one a
// target), reported on one line of stderr: each lane's stage and latest
// note side by side, drawn only when stderr is a terminal; notices and
// warnings as "papaya: ..." lines above it.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "workflow/reporter.h"

namespace papaya::cli {

class LanesProgress {
 public:
  explicit LanesProgress(size_t lanes);
  ~LanesProgress();  // ends the line
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
  std::vector<std::string> texts_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  bool active_;
  bool drawn_ = false;
};

}  // namespace papaya::cli
