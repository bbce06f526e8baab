#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>

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

}  // namespace papaya::cli
