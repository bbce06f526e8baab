#include "cli/report/lanes_progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <utility>

namespace papaya::cli {

class LanesProgress::Lane : public workflow::Reporter {
 public:
  Lane(LanesProgress& all, size_t k) : all_(all), k_(k) {}
  void begin(const std::string& stage) override {
    stage_ = stage;
    all_.set(k_, stage_);
  }
  void update(int done, int total, const std::string& note) override {
    all_.set(k_, stage_ + " " + std::to_string(done) + "/" + std::to_string(total) + (note.empty() ? "" : " " + note));
  }
  void end() override { all_.set(k_, ""); }
  void notice(const std::string& message) override { all_.print("papaya: " + message); }
  void warning(const std::string& message) override { all_.print("papaya: warning: " + message); }

 private:
  LanesProgress& all_;
  size_t k_;
  std::string stage_;
};

LanesProgress::LanesProgress(std::string label, size_t lanes)
    : label_(std::move(label)), texts_(lanes), active_(isatty(STDERR_FILENO)) {
  for (size_t k = 0; k < lanes; ++k) lanes_.push_back(std::make_unique<Lane>(*this, k));
}

workflow::Reporter& LanesProgress::lane(size_t k) { return *lanes_.at(k); }

LanesProgress::~LanesProgress() {
  if (drawn_) std::fputs("\r\033[K", stderr);  // the work is done: its line goes
}

void LanesProgress::set(size_t k, std::string text) {
  const std::lock_guard<std::mutex> lock(mutex_);
  texts_.at(k) = std::move(text);
  draw();
}

void LanesProgress::print(const std::string& line) {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::fprintf(stderr, "%s%s\n", drawn_ ? "\r\033[K" : "", line.c_str());
  draw();
}

void LanesProgress::draw() {
  if (!active_) return;
  std::string line = label_;
  const char* separator = ": ";
  for (const std::string& text : texts_) {
    if (text.empty()) continue;
    line += separator + text;
    separator = " | ";
  }
  // A line longer than the terminal wraps, and the next draw would not overwrite it.
  winsize size{};
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 1 && line.size() >= size.ws_col)
    line.resize(size.ws_col - 1u);
  std::fprintf(stderr, "\r%s\033[K", line.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace papaya::cli
