// Direct convolution of stride 1 (x86-64 CPUs with AVX-512F, or AVX2 and
// FMA, chosen at run time: ml/cpu.h): the forward product, the weight
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
// a tile, as 12 vectors of 8.) Each output is one sum over k in a fixed
// order, the same on both kernels, so the result does not depend on the
// thread count or on which of the two ran (it differs from the im2col +
// GEMM path's in the last bits: other sums in other orders).
//
// On cnn-fedavg's second convolution (32 x 14 x 14 in, 64 out, 5 x 5, pad 2)
// the forward product runs at 150-158 GFLOP/s where im2col and Eigen's
// GEMM together reach 113-124 (docs/benchmarks.md).
//
// Thread-safety: a DirectConv holds its own scratch; one per thread.
#pragma once

#include <cstdint>
#include <vector>

#include "ml/cpu.h"
#include "ml/layers.h"

namespace murmur::ml {

class DirectConv {
 public:
  // Whether `g` runs directly: ActiveCnnSimd() is AVX2 or AVX-512 (checked
  // at run time, so a portable build runs the kernels too; elsewhere every
  // convolution runs on im2col and a GEMM), stride 1, padding below the
  // kernel size, and at least 64 entries per patch (in.c x kernel^2;
  // shorter sums do not pay for the tiles' stores).
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
  CnnSimd level_;                       // the kernels' (ActiveCnnSimd() when made)
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
