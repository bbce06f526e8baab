#pragma once
// A job of `ranks` ranks in this process, one thread each, meeting over
// Gloo on a free loopback port: `body(rank's collectives)` on each, joined.
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "executor/distributed/collectives.h"
#include "executor/distributed/world.h"

namespace papaya::executor::testing {

inline void run_on_threads(int ranks, const std::function<void(Collectives&)>& body) {
  const int port = free_loopback_port();
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ranks; ++rank) {
    threads.emplace_back([&, rank] {
      World world;
      world.rank = rank;
      world.size = ranks;
      world.master_port = port;
      Collectives collectives(world, std::chrono::seconds(60));
      body(collectives);
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace papaya::executor::testing
