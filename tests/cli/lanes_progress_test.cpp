// cli::LanesProgress: several lanes' stages on one line of a terminal, cut
// to its width, notices above it, the line gone at the end; on anything
// but a terminal, the notices alone. stderr is pointed at a pseudo-terminal
// (or a pipe) for each test and read back.
#include "cli/report/lanes_progress.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

namespace papaya::cli {
namespace {

// Whether this machine gives out pseudo-terminals (a container may not).
bool have_terminal() {
  const int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0) return false;
  close(master);
  return true;
}

// What `write` sends to stderr while stderr is a terminal `columns` wide
// (or, with columns 0, a pipe).
std::string stderr_of(int columns, const std::function<void()>& write) {
  int reader = -1, writer = -1;
  if (columns > 0) {
    reader = posix_openpt(O_RDWR | O_NOCTTY);
    EXPECT_GE(reader, 0);
    EXPECT_EQ(grantpt(reader), 0);
    EXPECT_EQ(unlockpt(reader), 0);
    writer = open(ptsname(reader), O_RDWR | O_NOCTTY);
    EXPECT_GE(writer, 0);
    termios raw{};
    tcgetattr(writer, &raw);
    cfmakeraw(&raw);  // no "\n" -> "\r\n" on the way
    tcsetattr(writer, TCSANOW, &raw);
    winsize size{};
    size.ws_col = static_cast<unsigned short>(columns);
    size.ws_row = 24;
    ioctl(writer, TIOCSWINSZ, &size);
  } else {
    int ends[2];
    EXPECT_EQ(pipe(ends), 0);
    reader = ends[0], writer = ends[1];
  }
  std::fflush(stderr);
  const int saved = dup(STDERR_FILENO);
  dup2(writer, STDERR_FILENO);
  write();
  std::fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  close(writer);
  fcntl(reader, F_SETFL, O_NONBLOCK);
  std::string out;
  char buffer[4096];
  for (ssize_t n; (n = read(reader, buffer, sizeof buffer)) > 0;) out.append(buffer, static_cast<size_t>(n));
  close(reader);
  return out;
}

// The last line drawn: what follows the last "\r", up to its "\033[K".
std::string last_drawn(const std::string& out) {
  const std::string drawn = out.substr(0, out.rfind("\r\033[K"));  // the final clearing
  const size_t start = drawn.rfind('\r') + 1;
  return drawn.substr(start, drawn.rfind("\033[K") - start);
}

TEST(LanesProgress, EachLanesStageStandsSideBySideOnOneLine) {
  if (!have_terminal()) GTEST_SKIP() << "no pseudo-terminal here";
  const std::string out = stderr_of(200, [&] {
    LanesProgress progress("laying out llama", 3);
    progress.lane(0).begin("A100");
    progress.lane(2).begin("H100");
    progress.lane(2).update(3, 10, "8 GPUs");
    progress.lane(0).update(1, 10, "");
  });
  EXPECT_EQ(last_drawn(out), "laying out llama: A100 1/10 | H100 3/10 8 GPUs");
  EXPECT_EQ(out.substr(out.size() - 4), "\r\033[K");  // the line goes when the work is done
}

TEST(LanesProgress, ALaneThatEndsLeavesTheLine) {
  if (!have_terminal()) GTEST_SKIP() << "no pseudo-terminal here";
  const std::string out = stderr_of(200, [] {
    LanesProgress progress("searching", 2);
    progress.lane(0).begin("A100");
    progress.lane(1).begin("T4");
    progress.lane(0).end();
  });
  EXPECT_EQ(last_drawn(out), "searching: T4");
}

TEST(LanesProgress, TheLineIsCutToTheTerminal) {
  if (!have_terminal()) GTEST_SKIP() << "no pseudo-terminal here";
  const std::string out = stderr_of(20, [] {
    LanesProgress progress("laying out a long network name", 1);
    progress.lane(0).begin("H100-SXM-80GB");
  });
  EXPECT_EQ(last_drawn(out), std::string("laying out a long network name").substr(0, 19));
}

TEST(LanesProgress, NoticesGoAboveTheLineAndItIsDrawnAgain) {
  if (!have_terminal()) GTEST_SKIP() << "no pseudo-terminal here";
  const std::string out = stderr_of(200, [] {
    LanesProgress progress("searching", 1);
    progress.lane(0).begin("A100");
    progress.lane(0).notice("an assumption");
    progress.lane(0).warning("a doubt");
  });
  EXPECT_NE(out.find("\r\033[Kpapaya: an assumption\n\rsearching: A100\033[K"), std::string::npos) << out;
  EXPECT_NE(out.find("\r\033[Kpapaya: warning: a doubt\n"), std::string::npos) << out;
}

TEST(LanesProgress, OffATerminalOnlyTheNoticesAreWritten) {
  const std::string out = stderr_of(0, [] {
    LanesProgress progress("searching", 2);
    progress.lane(0).begin("A100");
    progress.lane(1).update(1, 2, "note");
    progress.lane(1).notice("an assumption");
  });
  EXPECT_EQ(out, "papaya: an assumption\n");
}

}  // namespace
}  // namespace papaya::cli
