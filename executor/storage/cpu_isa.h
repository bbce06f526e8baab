#pragma once
// CPU loops compiled for more than the baseline x86-64 (SSE2) the build
// targets: a loop is written once as an always-inlined template and
// instantiated in one function per instruction-set level, each marked with
// its target; the level of the CPU the process runs on picks which one
// runs. Every level computes the same floats (the files that use this are
// compiled with -ffp-contract=off, so that no level fuses a multiply-add
// that the baseline rounds twice). No LibTorch.

namespace papaya::executor::cpu_isa {

enum class Level { baseline, avx2, avx512 };

// The level the loops run at: this CPU's highest, or lower where limit()
// asked for it (tests and benchmarks compare the levels).
Level level();
void limit(Level highest);
const char* to_string(Level level);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PAPAYA_TARGET_AVX2 __attribute__((target("avx2")))
#define PAPAYA_TARGET_AVX512 __attribute__((target("avx2,avx512f,avx512bw,avx512vl")))
#else
#define PAPAYA_TARGET_AVX2
#define PAPAYA_TARGET_AVX512
#endif

// A loop body to inline into each level's function.
#define PAPAYA_CPU_KERNEL inline __attribute__((always_inline))

}  // namespace papaya::executor::cpu_isa
