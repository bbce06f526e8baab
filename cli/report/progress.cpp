#include "cli/report/progress.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace papaya::cli {

Progress::Progress(std::string label)
    : label_(std::move(label)), active_(isatty(STDERR_FILENO)), start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() {
  if (drawn_) std::fputs("\n", stderr);
}

void Progress::update(int done, int total, const std::string& note) {
  if (!active_ || total <= 0) return;
  constexpr int width = 30;
  const int filled = done * width / total;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double eta = done > 0 ? elapsed * (total - done) / done : 0;
  std::fprintf(stderr, "\r%s [%s%s] %d/%d %5.1fs left %s\033[K", label_.c_str(), std::string(filled, '#').c_str(),
               std::string(width - filled, '.').c_str(), done, total, eta, note.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressReporter::begin(const std::string& stage) {
  bar_.reset();  // ends the line of the stage before
  bar_.emplace(stage);
}

void ProgressReporter::update(int done, int total, const std::string& note) {
  if (bar_) bar_->update(done, total, note);
}

void ProgressReporter::end() { bar_.reset(); }

void ProgressReporter::notice(const std::string& message) { std::cerr << "papaya: " << message << "\n"; }

void ProgressReporter::warning(const std::string& message) { std::cerr << "papaya: warning: " << message << "\n"; }

}  // namespace papaya::cli
