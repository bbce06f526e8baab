#pragma once
// Where this process stands in a data-parallel job, as torchrun and
// `papaya train --nproc` tell it: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
// MASTER_PORT. Torch-free.
#include <optional>
#include <string>

namespace papaya::executor {

struct World {
  int rank = 0;
  int size = 1;
  int local_rank = 0;  // among the ranks of this host: which GPU it takes
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
};

// nullopt where WORLD_SIZE is unset. Throws InputError naming a variable that
// is not a number, or a rank outside the world.
std::optional<World> world_from_environment();

// A loopback TCP port nothing listens on now (the kernel's choice): where
// the ranks of a job on this host meet. Throws InputError if there is none.
int free_loopback_port();

}  // namespace papaya::executor
