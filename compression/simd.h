// Which vector code the compression kernels run, chosen at run time from the
// CPU, so that one portable binary (a package, a cross build's x86-64
// counterpart) runs AVX2 and AVX-512 code where the CPU has it and SSE2
// elsewhere, as a -march=native build does.
//
// The kernels that dispatch (x86-64): fp16 packing (AVX2 + F16C), int8
// packing's block maximum and stochastic rounding (AVX-512F), sign packing
// (AVX2) in compression/values.cc, and the candidate collection of top-k and
// threshold selection (AVX-512F, else AVX2) in compression/select.cc. Every
// level computes the same bits as the scalar code (the module is compiled
// without floating-point contraction; tests/compression/simd_test.cc checks
// each level the CPU has against the scalar one), so results never depend
// on the machine. Other loops are left to the compiler's auto-vectorization
// at the build's baseline; on aarch64 that baseline includes NEON and
// nothing dispatches.
//
// Thread-safety: all functions may be called from any thread.
#pragma once

#include <string_view>

namespace murmur::compression {

enum class SimdLevel : int { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

// "scalar", "avx2" (AVX2 with F16C) or "avx512" (AVX-512F with AVX2 and F16C).
std::string_view SimdName(SimdLevel level);
// The best level this CPU (and the operating system's saved vector state) supports.
SimdLevel SupportedSimd();
// The level the kernels run: SupportedSimd(), or lower when capped.
SimdLevel ActiveSimd();
// Caps the level the kernels run at (tests and benchmarks compare the
// levels); returns the previous cap. SimdLevel::kAvx512 removes the cap.
SimdLevel CapSimd(SimdLevel cap);

}  // namespace murmur::compression

// Function attributes for the dispatched variants (GCC and Clang).
#if defined(__x86_64__)
#define MURMUR_TARGET_AVX2 __attribute__((target("avx2,f16c")))
#define MURMUR_TARGET_AVX512 __attribute__((target("avx512f,avx2,f16c")))
#endif
