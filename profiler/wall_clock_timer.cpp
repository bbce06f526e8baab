#include "profiler/wall_clock_timer.h"

namespace papaya::profiler {

WallClockTimer::WallClockTimer(int layers, std::function<void()> synchronize)
    : synchronize_(std::move(synchronize)), times_(layers), forward_(layers), backward_(layers) {}

std::string WallClockTimer::name() const { return synchronize_ ? "synchronized-wall-clock" : "wall-clock"; }

void WallClockTimer::start_step() {
  times_.assign(times_.size(), PassTimes{});
  forward_.assign(forward_.size(), Open{});
  backward_.assign(backward_.size(), Open{});
}

WallClockTimer::Open& WallClockTimer::open(int layer, Pass pass) {
  return pass == Pass::forward ? forward_.at(layer) : backward_.at(layer);
}

void WallClockTimer::begin(int layer, Pass pass) {
  if (synchronize_) synchronize_();
  open(layer, pass) = {Clock::now(), true};
}

void WallClockTimer::end(int layer, Pass pass) {
  if (synchronize_) synchronize_();
  Open& o = open(layer, pass);
  if (!o.open) return;
  const double seconds = std::chrono::duration<double>(Clock::now() - o.since).count();
  (pass == Pass::forward ? times_[layer].forward_s : times_[layer].backward_s) += seconds;
  o.open = false;
}

std::vector<PassTimes> WallClockTimer::finish_step() { return times_; }

}  // namespace papaya::profiler
