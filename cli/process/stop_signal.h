#pragma once
// SIGINT and SIGTERM while training: the first asks training to stop after
// the step it is in (saving the state where --save says), a second one ends
// the process at once, as without papaya's handler.
#include <csignal>
#include <stdexcept>
#include <string>

namespace papaya::cli {

class StopSignal {
 public:
  StopSignal();   // installs the handlers
  ~StopSignal();  // puts the previous ones back
  StopSignal(const StopSignal&) = delete;
  StopSignal& operator=(const StopSignal&) = delete;

  int received() const;  // the signal received, 0 if none
};

// Training stopped by a signal: main reports it and exits with 128 + signal,
// as a shell does for a process a signal ended.
class Stopped : public std::runtime_error {
 public:
  Stopped(int signal, const std::string& what) : std::runtime_error(what), signal_(signal) {}
  int exit_code() const { return 128 + signal_; }

 private:
  int signal_;
};

// "SIGINT", "SIGTERM"
std::string signal_name(int signal);

}  // namespace papaya::cli
