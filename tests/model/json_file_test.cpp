// Atomic writes: a write that fails leaves the file as it was and nothing
// beside it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "model/error.h"
#include "model/json_file.h"

namespace papaya::model {
namespace {

std::string read(const std::filesystem::path& path) {
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  return text.str();
}

TEST(WriteFileAtomically, AFailedWriteLeavesTheOldFileAndNoTemporary) {
  const auto dir = std::filesystem::temp_directory_path() / ("papaya-atomic-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "state").string();
  write_text_file(path, "first");
  EXPECT_THROW(write_file_atomically(path,
                                     [](const std::string& temporary) {
                                       std::ofstream(temporary) << "half of a sec";  // a crash mid-write
                                       throw InputError("the disk is full");
                                     }),
               InputError);
  EXPECT_EQ(read(path), "first");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()), 1);
  write_file_atomically(path, [](const std::string& temporary) { std::ofstream(temporary) << "second"; });
  EXPECT_EQ(read(path), "second");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace papaya::model
