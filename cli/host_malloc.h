#pragma once

namespace papaya::cli {

// glibc's malloc gives large blocks back to the kernel once they are freed
// (blocks it mapped for them alone, and the top of its heap), so a training
// step on the CPU takes page faults on every large tensor it allocates again,
// step after step, a cost that grows with the batch while a layer run alone
// at that batch reuses its memory and shows none of it (14% of resnet-tiny's
// step at batch 32: bench/RESULTS.md). Keeping freed memory in the heap for
// reuse, as jemalloc or tcmalloc do, makes a step cost its work. Called first
// in main, so that profiles and training runs see the same; nothing off glibc.
void keep_freed_host_memory();

}  // namespace papaya::cli
