#include "profiler/cupti_timer.h"

#include "profiler/cupti_activity.h"
#include "profiler/kernel_attribution.h"

namespace papaya::profiler {
namespace {

// External ids: 0 is "no layer" (work between layers, the optimizer).
uint64_t external_id(int layer, Pass pass) { return 1 + 2 * static_cast<uint64_t>(layer) + (pass == Pass::backward); }

}  // namespace

CuptiTimer::CuptiTimer(int layers) : layers_(layers) { cupti::start(); }

CuptiTimer::~CuptiTimer() { cupti::stop(); }

void CuptiTimer::start_step() { cupti::take(); }

void CuptiTimer::begin(int layer, Pass pass) { cupti::set_external_id(external_id(layer, pass)); }

void CuptiTimer::end(int, Pass) { cupti::set_external_id(0); }

std::vector<PassTimes> CuptiTimer::finish_step() {
  const cupti::Records records = cupti::take();
  std::vector<PassTimes> times(layers_);
  for (const auto& [id, seconds] : busy_seconds_by_external_id(records.activities, records.correlations)) {
    if (id == 0 || id > 2 * static_cast<uint64_t>(layers_)) continue;
    PassTimes& t = times[(id - 1) / 2];
    ((id - 1) % 2 ? t.backward_s : t.forward_s) = seconds;
  }
  return times;
}

}  // namespace papaya::profiler
