// Which vector code the native CNN's kernels run, decided at run time from
// the CPU, so that a portable build (the package's, whose baseline on x86-64
// is SSE2) runs the AVX2 and AVX-512 kernels where the CPU has them, as a
// build for that CPU does. The kernels that dispatch: the direct
// convolution (ml/direct_conv.h: AVX-512F, else AVX2 with FMA; both compute
// the same bits) and 2 x 2 max pooling (ml/layers.cc: AVX-512F; the scalar
// loop's bits).
//
// Thread-safety: all functions may be called from any thread.
#pragma once

#include <string_view>

namespace murmur::ml {

enum class CnnSimd : int { kGeneric = 0, kAvx2 = 1, kAvx512 = 2 };

// "generic" (im2col and Eigen's GEMM for every convolution), "avx2" (AVX2
// with FMA) or "avx512" (AVX-512F).
std::string_view CnnSimdName(CnnSimd level);
// The best level this CPU, and the operating system's saved vector state,
// supports: x86-64 only; elsewhere kGeneric.
CnnSimd SupportedCnnSimd();
// The level the kernels run: SupportedCnnSimd(), or lower when capped. A
// DirectConv keeps the level it was made with.
CnnSimd ActiveCnnSimd();
// Caps the level (tests and benchmarks compare the levels); returns the
// previous cap. CnnSimd::kAvx512 removes the cap.
CnnSimd CapCnnSimd(CnnSimd cap);

}  // namespace murmur::ml

// The attributes of functions compiled for AVX2 with FMA, or for AVX-512F,
// whatever the build's baseline. Attributes rather than translation units
// built with -mavx2 or -mavx512f, so that no inline function shared with
// other code (the standard library's, Eigen's) is emitted with those
// instructions.
#if defined(__x86_64__)
#define MURMUR_TARGET_AVX2_FMA __attribute__((target("avx2,fma")))
#define MURMUR_TARGET_AVX512F __attribute__((target("avx512f")))
#endif
