// Matrix products with one result on every machine.
//
// Gemm computes C = A B, or C += A B, over float matrices given as strided
// views. Every element of C is one chain of fused multiply-adds over k in
// increasing order:
//
//     c = c0;  for k = 0 .. K-1:  c = fma(A[i][k], B[k][j], c)
//
// with c0 = +0 (GemmMode::kSet) or the old C[i][j] (GemmMode::kAdd), each
// fma rounded once (IEEE 754 fusedMultiplyAdd). The kernels (portable C++,
// AVX2 with FMA, AVX-512F: core/simd.h) vectorize across j and block over
// i, j and k, and none of that changes any chain, since a partial sum held
// in C between two blocks of k is the same float a register would hold. So
// C is the same bits whichever kernel ran: on any CPU, for a native or a
// portable build, on x86-64 and aarch64, for any cache size and any thread
// count. (A library GEMM cannot promise this: Eigen picks its blocking over
// k from the cache sizes it reads from the CPU, OpenBLAS its kernel from the
// CPU model, and each sums the blocks of k apart before adding them.)
//
// NaNs propagate as NaNs; which NaN payload is not specified.
//
// Speed: A is read where it lies (row-major or transposed) and broadcast
// against rows of B, 64 rows of B at a time with the next 64 prefetched;
// on AVX-512 a tile of 12 x 32 outputs keeps 24 accumulators in registers.
// A strided B (W^T of a row-major W) is copied, or, when A and C are the
// smaller copies, the product is computed as C^T = B^T A^T (the same
// chains). 0.84-0.86 of the core's FMA peak for the MLP's 32 x 784 x 128
// product (docs/benchmarks.md, "Same bits on every machine").
//
// Thread-safety: Gemm may run on any number of threads at once; its scratch
// (the packed panels) is per thread.
#pragma once

#include <cstdint>

#include "core/simd.h"

namespace murmur {

// A read-only strided view of a rows x cols float matrix: element (r, c) is
// data[r * row_stride + c * col_stride]. Never owns.
struct MatrixView {
  const float* data = nullptr;
  std::int64_t rows = 0, cols = 0;
  std::int64_t row_stride = 0, col_stride = 1;

  // A row-major matrix whose rows are `ld` floats apart (ld >= cols).
  static MatrixView RowMajor(const float* data, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
    return {data, rows, cols, ld, 1};
  }
  static MatrixView RowMajor(const float* data, std::int64_t rows, std::int64_t cols) {
    return RowMajor(data, rows, cols, cols);
  }
  // The transpose, as a view of the same floats.
  MatrixView T() const { return {data, cols, rows, col_stride, row_stride}; }
};

enum class GemmMode {
  kSet,  // C = A B
  kAdd,  // C += A B (each chain starts from C's old value)
};

// C (a.rows x b.cols, row-major, rows ldc floats apart) = or += A B, on the
// kernels of ActiveSimd().
// REQUIRES: a.cols == b.rows, ldc >= b.cols; C overlaps neither A nor B.
void Gemm(const MatrixView& a, const MatrixView& b, float* c, std::int64_t ldc, GemmMode mode);
// The same on the kernels of `level` (capped at SupportedSimd()), for tests
// and benchmarks.
void Gemm(SimdLevel level, const MatrixView& a, const MatrixView& b, float* c, std::int64_t ldc,
          GemmMode mode);

}  // namespace murmur
