// Which vector code murmur's kernels run: one level for every kernel that
// dispatches (the matrix products of core/gemm.h, the direct convolution
// and pooling of ml/, the compression kernels), decided at run time from
// the CPU, so that a portable build (the package's, whose x86-64 baseline
// is SSE2) runs the AVX2 and AVX-512 code where the CPU has it, as a build
// for that CPU does.
//
// Every level computes the same bits: each kernel fixes the order of its
// sums and the place of every fused multiply-add, and vector width only
// decides how many of those independent chains run at once
// (docs/simulator.md, "Same bits on every machine"). The level is therefore
// a matter of speed alone, and tests force each one to check exactly that.
//
// The environment variable MURMUR_SIMD (generic, avx2 or avx512) caps the
// level for a whole process: murmur, murmurd and the Python package read it
// at start (CapSimdFromEnvironment) and refuse any other value.
//
// Thread-safety: all functions may be called from any thread.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace murmur {

enum class SimdLevel : int {
  kGeneric = 0,  // portable C++ (auto-vectorized at the build's baseline; NEON on aarch64)
  kAvx2 = 1,     // x86-64 with AVX2, FMA and F16C
  kAvx512 = 2,   // the above and AVX-512F
};

// "generic", "avx2" or "avx512".
std::string_view SimdName(SimdLevel level);
// The level named `name` (as SimdName prints it), or nothing.
std::optional<SimdLevel> ParseSimdLevel(std::string_view name);
// The best level this CPU, and the operating system's saved vector state,
// supports: x86-64 only; elsewhere kGeneric.
SimdLevel SupportedSimd();
// The level the kernels run: SupportedSimd(), or lower when capped.
SimdLevel ActiveSimd();
// Caps the level (tests and benchmarks compare the levels); returns the
// previous cap. SimdLevel::kAvx512 removes the cap.
SimdLevel CapSimd(SimdLevel cap);
// Every level from kGeneric up to SupportedSimd(), lowest first.
std::vector<SimdLevel> SupportedSimdLevels();

// Caps the level for its lifetime and restores the previous cap when it
// ends (tests and benchmarks that run the same work at each level).
class ScopedSimdCap {
 public:
  explicit ScopedSimdCap(SimdLevel cap) : previous_(CapSimd(cap)) {}
  ~ScopedSimdCap() { CapSimd(previous_); }
  ScopedSimdCap(const ScopedSimdCap&) = delete;
  ScopedSimdCap& operator=(const ScopedSimdCap&) = delete;

 private:
  SimdLevel previous_;
};

// Caps the level at MURMUR_SIMD when it is set; InvalidArgument (naming the
// variable and the accepted values) when it is set to anything else.
Status CapSimdFromEnvironment();

// Eigen's matrix products, which murmur still uses outside training (the
// spectral analysis of topologies, the benchmarks' floors), choose their
// blocking over k from cache sizes Eigen reads from the CPU, so two CPUs sum
// in different orders. This sets those sizes to fixed values (32 KiB, 1 MiB,
// 32 MiB) for the whole process, so that such products sum in one order on
// every CPU too. The programs call it at start.
void PinEigenBlocking();

}  // namespace murmur

// The attributes of functions compiled for a level, whatever the build's
// baseline. Attributes rather than translation units built with -mavx2 or
// -mavx512f, so that no inline function shared with other code (the
// standard library's, Eigen's) is emitted with those instructions.
#if defined(__x86_64__)
#define MURMUR_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#define MURMUR_TARGET_AVX512 __attribute__((target("avx512f,avx2,fma,f16c")))
#endif
