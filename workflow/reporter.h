#pragma once
// What long work tells the person waiting for it: the stage it is in and how
// far along, and what they should know that does not stop it. The workflow
// reports; the command line draws (cli/report/progress.h).
#include <string>

namespace papaya::workflow {

class Reporter {
 public:
  virtual ~Reporter() = default;
  // A stage begins ("profiling", "fitting", "planning"), ending the one before.
  virtual void begin(const std::string& stage) = 0;
  virtual void update(int done, int total, const std::string& note = "") = 0;
  // The current stage is over.
  virtual void end() = 0;
  // Something that changes how the work is done ("profiling at 16, 32 and 64 tokens ...").
  virtual void notice(const std::string& message) = 0;
  virtual void warning(const std::string& message) = 0;
};

// Reports nowhere: for callers with no one waiting.
class SilentReporter : public Reporter {
 public:
  void begin(const std::string&) override {}
  void update(int, int, const std::string&) override {}
  void end() override {}
  void notice(const std::string&) override {}
  void warning(const std::string&) override {}
};

}  // namespace papaya::workflow
