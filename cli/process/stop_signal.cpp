#include "cli/process/stop_signal.h"

namespace papaya::cli {
namespace {

volatile std::sig_atomic_t received_signal = 0;
struct sigaction previous_int, previous_term;

extern "C" void on_stop_signal(int signal) {
  received_signal = signal;
  std::signal(signal, SIG_DFL);  // a second one ends the process
}

}  // namespace

StopSignal::StopSignal() {
  received_signal = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &previous_int);
  sigaction(SIGTERM, &action, &previous_term);
}

StopSignal::~StopSignal() {
  sigaction(SIGINT, &previous_int, nullptr);
  sigaction(SIGTERM, &previous_term, nullptr);
}

int StopSignal::received() const { return received_signal; }

std::string signal_name(int signal) {
  switch (signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "signal " + std::to_string(signal);
  }
}

}  // namespace papaya::cli
