#pragma once
// A data-parallel job on this host (`papaya train --nproc N`): this
// process started again as its N ranks.
namespace papaya::workflow {

// Starts this executable with this process's arguments `nproc` times, with
// RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR=127.0.0.1 and a free MASTER_PORT
// set, as torchrun would; rank 0 speaks for the job. Returns when every rank
// has ended well. A rank that fails (an error, a signal) ends the others
// (SIGTERM, then SIGKILL after a few seconds) and is an InputError naming it.
void launch_ranks(int nproc);

}  // namespace papaya::workflow
