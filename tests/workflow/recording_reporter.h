#pragma once
// A workflow::Reporter that writes down what it is told, one line a call:
// "begin planning", "update 0/1 ...", "end", "notice ...", "warning ...".
#include <string>
#include <vector>

#include "workflow/reporter.h"

namespace papaya::workflow {

class RecordingReporter : public Reporter {
 public:
  void begin(const std::string& stage) override { calls.push_back("begin " + stage); }
  void update(int done, int total, const std::string& note) override {
    calls.push_back("update " + std::to_string(done) + "/" + std::to_string(total) + (note.empty() ? "" : " " + note));
  }
  void end() override { calls.push_back("end"); }
  void notice(const std::string& message) override { calls.push_back("notice " + message); }
  void warning(const std::string& message) override { calls.push_back("warning " + message); }

  // The stages begun, in order.
  std::vector<std::string> stages() const {
    std::vector<std::string> out;
    for (const std::string& call : calls) {
      if (call.rfind("begin ", 0) == 0) out.push_back(call.substr(6));
    }
    return out;
  }

  std::vector<std::string> calls;
};

}  // namespace papaya::workflow
