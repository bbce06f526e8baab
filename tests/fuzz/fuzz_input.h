#pragma once
// What every libFuzzer harness shares: the input as a file, for loaders that
// read one, and the one accepted way to fail. An InputError is how papaya
// turns bad input into one line and exit code 2; anything else escaping a
// loader (another exception, a crash, a sanitizer report) is a bug.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "model/error.h"

namespace papaya::fuzz {

// This process's scratch folder, under $TMPDIR.
const std::filesystem::path& scratch_dir();

// Writes the input to the scratch file `name` and returns its path.
std::string input_file(const uint8_t* data, size_t size, const std::string& name);

// Aborts, printing `message`, unless it is one non-empty line.
void check_one_line(const std::string& message);

// Runs `load`; an InputError must carry one non-empty line.
template <typename Load>
void accept_input_error(Load&& load) {
  try {
    load();
  } catch (const InputError& e) {
    check_one_line(e.what());
  }
}

}  // namespace papaya::fuzz
