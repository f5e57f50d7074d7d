// The per-sample kernels of the convolutional model (ml/cnn.h): convolution
// by im2col, max and average pooling, group normalization and dropout, each
// with its backward pass.
//
// A sample is a C x H x W tensor stored row-major (channels outermost, as
// PyTorch's NCHW without the batch). A convolution's weight is the row-major
// {out_channels, in_channels * k * k} matrix whose column (c * k + i) * k + j
// multiplies input channel c at kernel row i, column j (PyTorch's
// {out, in, k, k} weight flattened), so Y = W * im2col(X) + b.
//
// Thread-safety: free functions over caller-owned memory.
#pragma once

#include <cstdint>

namespace murmur::ml {

struct Shape3 {
  std::int64_t c = 0, h = 0, w = 0;
  std::int64_t size() const { return c * h * w; }
  bool operator==(const Shape3&) const = default;
};

struct ConvGeometry {
  Shape3 in;
  std::int64_t out_channels = 0, kernel = 0, stride = 1, pad = 0;
  // (in.h + 2 pad - kernel) / stride + 1 rows, likewise columns.
  Shape3 out() const;
  std::int64_t patch() const { return in.c * kernel * kernel; }  // rows of the im2col matrix
  // Floats of a zero-padded copy of one sample, in.c x (in.h + 2 pad) x (in.w + 2 pad).
  std::int64_t padded_size() const { return in.c * (in.h + 2 * pad) * (in.w + 2 * pad); }
};

// Writes the patches of sample x as the row-major patch() x (out.h * out.w)
// matrix `cols`; positions in the padding read as zero. With stride 1 and
// `padded` (scratch of padded_size() floats) it copies x into a zero-padded
// sample first, so that each patch row is a plain strided block copy
// without bounds (the same bits, 1.7x faster on cnn-fedavg's second
// convolution; docs/benchmarks.md); otherwise row by row with the bounds.
void Im2Col(const ConvGeometry& g, const float* x, float* cols, float* padded = nullptr);
// Writes to dx the gradient of `cols` (the inverse scatter of Im2Col: each
// element of dx is the sum of the patch entries that copied it). With
// stride 1 and `padded` the patch rows are summed into a zero-padded sample,
// whose inside is then copied to dx: the same bits as without it (each
// element's terms add in the same order), 1.3x faster.
void Col2Im(const ConvGeometry& g, const float* dcols, float* dx, float* padded = nullptr);

// Pooling over k x k windows with stride k (no padding; a remainder of rows or
// columns is dropped, as PyTorch's default floor mode).
Shape3 PoolOutput(const Shape3& in, std::int64_t k);
// y = the window's maximum (the first one on ties); argmax[o] = its index in x.
void MaxPoolForward(const Shape3& in, std::int64_t k, const float* x, float* y, std::int32_t* argmax);
// dx = the pooled gradient at each window's maximum, zero elsewhere.
void MaxPoolBackward(const Shape3& in, std::int64_t k, const float* dy, const std::int32_t* argmax,
                     float* dx);
void AvgPoolForward(const Shape3& in, std::int64_t k, const float* x, float* y);
void AvgPoolBackward(const Shape3& in, std::int64_t k, const float* dy, float* dx);

// Group normalization (Wu and He 2018): the channels split into `groups`
// groups; each group of a sample is normalized by its own mean and variance
// (biased, plus eps = 1e-5, as PyTorch), then scaled and shifted per channel:
// y = gamma_c * xhat + beta_c. Keeps xhat (in.size()) and the inverse
// standard deviation per group for the backward pass.
inline constexpr float kGroupNormEps = 1e-5f;
void GroupNormForward(const Shape3& in, std::int64_t groups, const float* x, const float* gamma,
                      const float* beta, float* xhat, float* inv_std, float* y);
// dx from dy; adds the sample's share to dgamma and dbeta.
void GroupNormBackward(const Shape3& in, std::int64_t groups, const float* dy, const float* xhat,
                       const float* inv_std, const float* gamma, float* dx, float* dgamma, float* dbeta);

// Inverted dropout of n values: each is kept with probability 1 - p and then
// scaled by 1 / (1 - p), so the expectation is unchanged and evaluation is the
// identity. The keep decisions come from Philox under `seed` (one stream per
// sample of the batch, `stream`), so they do not depend on threads. Writes the
// factor of each value (0 or 1 / (1 - p)) to `scale` for the backward pass.
void DropoutForward(std::int64_t n, double p, std::uint64_t seed, std::uint64_t stream, const float* x,
                    float* y, float* scale);

}  // namespace murmur::ml
