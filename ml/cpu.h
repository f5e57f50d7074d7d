// Which vector code the native model's kernels may run, decided at run time
// from the CPU, so that a portable build (the package's, whose baseline on
// x86-64 is SSE2) runs the AVX-512 kernels where the CPU has them, as a
// build for that CPU does. The kernels that dispatch: the direct
// convolution (ml/direct_conv.h) and 2 x 2 max pooling (ml/layers.cc).
//
// Thread-safety: may be called from any thread.
#pragma once

namespace murmur::ml {

// An x86-64 CPU with AVX-512F whose operating system saves its registers.
bool HasAvx512();

}  // namespace murmur::ml

// The attribute of a function compiled for AVX-512F whatever the build's
// baseline. An attribute rather than a translation unit built with
// -mavx512f, so that no inline function shared with other code (the
// standard library's, Eigen's) is emitted with AVX-512 instructions.
#if defined(__x86_64__)
#define MURMUR_TARGET_AVX512F __attribute__((target("avx512f")))
#endif
