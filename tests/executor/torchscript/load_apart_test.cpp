#include "executor/torchscript/load_apart.h"

#include <gtest/gtest.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <ctime>
#include <thread>

namespace papaya::executor::torchscript {
namespace {

// A child process that runs `wait`, made of system calls alone (the child of
// a process with threads may find any lock held), until it is killed.
template <typename Wait>
pid_t child_that(Wait wait) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    wait();
    ::syscall(SYS_exit_group, 0);  // never past here: the test goes on in the parent alone
  }
  return pid;
}

void end(pid_t pid) {
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

// Whether waits_forever says so of `pid` within `seconds`, asked every 10 ms.
bool seen_waiting_forever(pid_t pid, double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (waits_forever(pid)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// What a child stuck on a lock held at its fork looks like: its one thread
// on a futex nobody will wake.
TEST(LoadApart, AOneThreadedChildOnAFutexWaitsForever) {
  const pid_t pid = child_that([] {
    static uint32_t word = 0;
    for (;;) ::syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, nullptr, nullptr, 0);
  });
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(seen_waiting_forever(pid, 10));
  end(pid);
}

// A child that sleeps or computes (a slow load) is waited on.
TEST(LoadApart, ASleepingOrComputingChildDoesNot) {
  const pid_t sleeping = child_that([] {
    for (;;) {
      timespec minute{60, 0};
      ::nanosleep(&minute, nullptr);
    }
  });
  const pid_t computing = child_that([] {
    for (volatile uint64_t i = 0;; i = i + 1) {
    }
  });
  ASSERT_GT(sleeping, 0);
  ASSERT_GT(computing, 0);
  EXPECT_FALSE(seen_waiting_forever(sleeping, 0.5));
  EXPECT_FALSE(seen_waiting_forever(computing, 0.5));
  end(sleeping);
  end(computing);
  EXPECT_FALSE(waits_forever(sleeping));  // gone
}

}  // namespace
}  // namespace papaya::executor::torchscript
