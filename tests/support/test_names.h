#pragma once
// gtest names a parameterized case by an identifier: a network's name
// ("gpt-tiny") with its dashes as underscores.
#include <string>

namespace papaya::test_support {

inline std::string identifier(std::string name) {
  for (char& c : name) c = c == '-' ? '_' : c;
  return name;
}

// INSTANTIATE_TEST_SUITE_P's name generator over network names.
struct NetworkParamName {
  template <typename Info>
  std::string operator()(const Info& info) const {
    return identifier(info.param);
  }
};

}  // namespace papaya::test_support
