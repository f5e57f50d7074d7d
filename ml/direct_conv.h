// Direct convolution of stride 1 (AVX-512F, AVX2 with FMA or portable C++,
// chosen at run time: core/simd.h): the forward product, the weight
// gradient and the input gradient of a convolution computed straight from zero-padded copies of the sample
// and of its output gradient, without an im2col matrix, its packing into a GEMM's panels, Eigen's clearing of
// each product's destination, or col2im's scatter.
//
// Each of the three is the same register-blocked kernel: acc[j][v] +=
// A[k][v] * s[koff[k] + off[j]] over k, where A is a packed matrix of up to
// 64 channels a row (the weights, or the output gradient transposed) and s
// is a padded sample read at precomputed offsets, broadcast to the 16 lanes
// of a vector. With 64 channels a tile of 7 positions keeps 28 accumulators
// in registers (7 x 4 vectors of 16), and each k costs 4 loads of A, 7
// broadcasts and 28 fused multiply-adds: the FMA units, not the loads, set
// the pace. (The AVX2 kernel does the same sums 16 channels by 6 positions
// a tile, as 12 vectors of 8; the portable kernel four positions by a row
// of channels.) Each output is one chain of fused multiply-adds over k in a
// fixed order, the same on every kernel, so the result does not depend on
// the thread count, the CPU or which kernel ran. Whether a convolution runs
// here or on im2col and a GEMM depends on its geometry alone (Supports), so
// every machine takes the same path.
//
// On cnn-fedavg's second convolution (32 x 14 x 14 in, 64 out, 5 x 5, pad 2)
// the forward product runs at 150-158 GFLOP/s where im2col and Eigen's
// GEMM together reach 113-124 (docs/benchmarks.md).
//
// Thread-safety: a DirectConv holds its own scratch; one per thread.
#pragma once

#include <cstdint>
#include <vector>

#include "core/simd.h"
#include "ml/layers.h"

namespace murmur::ml {

class DirectConv {
 public:
  // Whether `g` runs directly: stride 1, padding below the kernel size,
  // and at least 64 entries per patch (in.c x kernel^2; shorter sums do not
  // pay for the tiles' stores). On no account the CPU: every machine must
  // take the same path to compute the same bits.
  static bool Supports(const ConvGeometry& g);

  explicit DirectConv(const ConvGeometry& g);

  // Packs the weight (row-major {out, in k k}) for Forward. Call again when
  // the weights change.
  void PackForward(const float* w);
  // y = W * im2col(x) + bias (out.c x (out.h out.w), row-major), then
  // max(y, 0) with `relu`.
  void Forward(const float* x, const float* bias, bool relu, float* y);

  // Packs the weight for InputGradient. Call again when the weights change.
  void PackInputGradient(const float* w);
  // dx = the gradient of x given dy (out.c x out.h out.w), every element written.
  void InputGradient(const float* dy, float* dx);

  // Adds dy * im2col(x)^T, the weight gradient of one sample, to a sum kept
  // here (packed, so that each tile adds in place); `first` starts it.
  void AccumulateWeightGradient(const float* x, const float* dy, bool first);
  // dw = the sum, as the {out, in k k} weight.
  void WriteWeightGradient(float* dw) const;

 private:
  ConvGeometry g_;
  Shape3 out_;
  SimdLevel level_;                     // the kernels' (ActiveSimd() when made)
  std::int64_t hp_, wp_;                // the padded input's rows and columns
  std::int64_t hq_, wq_;                // the padded output gradient's
  std::vector<std::int32_t> in_at_;     // per patch entry (c, i, j): its offset in the padded input
  std::vector<std::int32_t> out_at_;    // per output position: its corner's offset in the padded input
  std::vector<std::int32_t> grad_at_;   // per (out channel, i, j): its offset in the padded output gradient
  std::vector<std::int32_t> pixel_at_;  // per input position: its offset in the padded output gradient
  std::vector<float> forward_w_, input_w_;  // packed weights
  std::vector<float> x_pad_, dy_pad_, dy_t_;
  std::vector<float> sum_;   // the forward product or the input gradient, packed
  std::vector<float> dw_t_;  // the weight gradient's running sum, packed
};

}  // namespace murmur::ml
