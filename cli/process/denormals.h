#pragma once

namespace papaya::cli {

// Flushes denormal floats to zero, as results and as operands, on this thread
// and the threads it starts after (they inherit its floating-point state).
// An x86 core computes on a denormal through a microcode assist of a hundred
// cycles or more: a nanoGPT's training step ran 9 times slower on an Intel
// Xeon than with them flushed, and 5 times slower than its profile
// predicted (bench/RESULTS.md). Its time depended on the values, which no
// performance model can know; flushed, a step costs what its shapes cost.
// What training computes changes by less than the smallest normal float.
// Called first in main, so that profiles and training runs see the same.
// Returns false where the CPU cannot (not x86 with SSE3).
bool flush_denormals();

}  // namespace papaya::cli
