// An error is one line of valid UTF-8 whatever the user's input held.
#include "model/error.h"

#include <gtest/gtest.h>

namespace papaya {
namespace {

TEST(PrintableLine, EscapesWhatIsNoTextAndKeepsWhatIs) {
  EXPECT_EQ(printable_line("a\nb\rc"), "a\\nb\\rc");
  EXPECT_EQ(printable_line("tab\there"), "tab\\x09here");
  EXPECT_EQ(printable_line(std::string("x\xFFy")), "x\\xFFy");                // never UTF-8
  EXPECT_EQ(printable_line(std::string("\xC0\xAF")), "\\xC0\\xAF");           // an overlong '/'
  EXPECT_EQ(printable_line(std::string("\xED\xA0\x80")), "\\xED\\xA0\\x80");  // a surrogate
  EXPECT_EQ(printable_line(std::string("\xE2\x82")), "\\xE2\\x82");           // cut short
  EXPECT_EQ(printable_line("µs → 2 GiB ✓ 𝛼"), "µs → 2 GiB ✓ 𝛼");              // 2-, 3- and 4-byte sequences kept
  EXPECT_EQ(InputError(std::string("config 'a\xFF'")).what(), std::string("config 'a\\xFF'"));
}

}  // namespace
}  // namespace papaya
