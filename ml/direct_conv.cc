#include "ml/direct_conv.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/simd.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace murmur::ml {

namespace {

constexpr std::int64_t kLanes = 16;
constexpr std::int64_t kBlock = 4 * kLanes;  // channels a packed row holds at most
// A shorter patch (a first layer on one channel: 25 entries with 5 x 5
// kernels) leaves too few multiply-adds per output to pay for writing
// each tile out transposed: cnn-fedavg trained at 1,386-1,413 samples/s with
// its first convolution direct, 1,437-1,490 with it on im2col and a GEMM.
constexpr std::int64_t kMinPatch = 64;

// Channel blocks of a packed matrix: block b holds channels [64 b, 64 b + 64)
// in rows of vectors(b) x 16 floats, the channels past the last zero.
std::int64_t Blocks(std::int64_t channels) { return (channels + kBlock - 1) / kBlock; }
std::int64_t BlockChannels(std::int64_t channels, std::int64_t b) {
  return std::min(kBlock, channels - b * kBlock);
}
std::int64_t Vectors(std::int64_t channels, std::int64_t b) {
  return (BlockChannels(channels, b) + kLanes - 1) / kLanes;
}
std::int64_t PackedSize(std::int64_t channels, std::int64_t rows) {
  std::int64_t n = 0;
  for (std::int64_t b = 0; b < Blocks(channels); ++b) n += rows * Vectors(channels, b) * kLanes;
  return n;
}

// Packs entry (channel c, row k) = at(c, k) of `channels` x `rows` into the
// blocked layout above.
template <typename At>
void Pack(std::int64_t channels, std::int64_t rows, At at, float* out) {
  for (std::int64_t b = 0; b < Blocks(channels); ++b) {
    const std::int64_t width = Vectors(channels, b) * kLanes, n = BlockChannels(channels, b);
    for (std::int64_t k = 0; k < rows; ++k) {
      float* row = out + k * width;
      for (std::int64_t c = 0; c < n; ++c) row[c] = at(b * kBlock + c, k);
      std::fill(row + n, row + width, 0.0f);
    }
    out += rows * width;
  }
}

#if defined(__x86_64__)
// The kernels below are compiled for AVX-512F (or AVX2 with FMA) whatever
// the build's baseline and run only where the CPU has it (ml/cpu.h).
// One tile: acc[j][v] = sum over k of a[k][v] * src[koff[k] + off[j]],
// starting from tile[j][v] with `add` (else from zero), written to
// tile[j][v]. NP x V accumulators stay in registers.
template <int V, int NP>
MURMUR_TARGET_AVX512 void Micro(const float* a, std::int64_t kn, const float* src, const std::int32_t* koff,
                                const std::int32_t* off, bool add, float* tile) {
  __m512 acc[NP][V];
  for (int j = 0; j < NP; ++j)
    for (int v = 0; v < V; ++v)
      acc[j][v] = add ? _mm512_loadu_ps(tile + (j * V + v) * kLanes) : _mm512_setzero_ps();
  std::int32_t at[NP];
  for (int j = 0; j < NP; ++j) at[j] = off[j];
  for (std::int64_t k = 0; k < kn; ++k) {
    __m512 w[V];
    for (int v = 0; v < V; ++v) w[v] = _mm512_loadu_ps(a + k * V * kLanes + v * kLanes);
    const float* s = src + koff[k];
#pragma GCC unroll 28
    for (int j = 0; j < NP; ++j) {
      const __m512 x = _mm512_set1_ps(s[at[j]]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[j][v] = _mm512_fmadd_ps(w[v], x, acc[j][v]);
    }
  }
  for (int j = 0; j < NP; ++j)
    for (int v = 0; v < V; ++v) _mm512_storeu_ps(tile + (j * V + v) * kLanes, acc[j][v]);
}

// Adds the sums of n offsets `off` into `sum` (n rows of V x 16 floats, row
// j for offset j), or writes them without `add`: each tile of NP offsets
// reads its rows of `sum` into registers, adds its terms and writes them
// back. A last partial tile goes through a copy whose extra offsets repeat
// its last one.
template <int V, int NP>
MURMUR_TARGET_AVX512 void SumTiles(const float* a, std::int64_t kn, const float* src,
                                   const std::int32_t* koff, const std::int32_t* off, std::int64_t n,
                                   bool add, float* sum) {
  constexpr std::int64_t row = V * kLanes;
  alignas(64) float tile[NP * row];
  std::int32_t last[NP];
  for (std::int64_t j0 = 0; j0 < n; j0 += NP) {
    const std::int64_t count = std::min<std::int64_t>(NP, n - j0);
    if (count == NP) {
      Micro<V, NP>(a, kn, src, koff, off + j0, add, sum + j0 * row);
      continue;
    }
    for (std::int64_t j = 0; j < NP; ++j) last[j] = off[j0 + std::min(j, count - 1)];
    std::fill(tile, tile + NP * row, 0.0f);
    if (add) std::copy_n(sum + j0 * row, count * row, tile);
    Micro<V, NP>(a, kn, src, koff, last, add, tile);
    std::copy_n(tile, count * row, sum + j0 * row);
  }
}

// For every channel block of the packed `a` (channels x kn): the sums of
// the n offsets into `sum`, in the packed layout (block by block, n rows of
// the block's width). The tile widths keep 28 accumulators (27 for 3
// vectors) in the 32 registers.
MURMUR_TARGET_AVX512 void SumBlocks(std::int64_t channels, const float* a, std::int64_t kn, const float* src,
                                    const std::int32_t* koff, const std::int32_t* off, std::int64_t n,
                                    bool add, float* sum) {
  for (std::int64_t b = 0; b < Blocks(channels); ++b) {
    const std::int64_t vectors = Vectors(channels, b);
    switch (vectors) {
      case 1: SumTiles<1, 28>(a, kn, src, koff, off, n, add, sum); break;
      case 2: SumTiles<2, 14>(a, kn, src, koff, off, n, add, sum); break;
      case 3: SumTiles<3, 9>(a, kn, src, koff, off, n, add, sum); break;
      default: SumTiles<4, 7>(a, kn, src, koff, off, n, add, sum); break;
    }
    a += kn * vectors * kLanes;
    sum += n * vectors * kLanes;
  }
}

// The AVX2 kernels: the same sums over the same packed layout, each 16-lane
// group of a row as two 8-lane vectors. With 16 registers a tile is one
// group (16 channels) by 6 offsets, 12 accumulators; each k costs 2 loads
// of A, 6 broadcasts and 12 fused multiply-adds. Every output is the same
// fused multiply-adds in the same order as in the AVX-512 kernel, so the
// two compute the same bits.
constexpr int kAvx2Offsets = 6;

// acc[j][h] = sum over k of a[k * stride + 8 h ...] * src[koff[k] + off[j]]
// for j < 6, starting from the tile's rows (row j at tile + j * tile_stride)
// with `add`, else from zero; written back to them.
MURMUR_TARGET_AVX2 void MicroAvx2(const float* a, std::int64_t stride, std::int64_t kn, const float* src,
                                  const std::int32_t* koff, const std::int32_t* off, bool add, float* tile,
                                  std::int64_t tile_stride) {
  constexpr int NP = kAvx2Offsets;
  __m256 acc[NP][2];
  for (int j = 0; j < NP; ++j)
    for (int h = 0; h < 2; ++h)
      acc[j][h] = add ? _mm256_loadu_ps(tile + j * tile_stride + h * 8) : _mm256_setzero_ps();
  std::int32_t at[NP];
  for (int j = 0; j < NP; ++j) at[j] = off[j];
  for (std::int64_t k = 0; k < kn; ++k) {
    const __m256 w0 = _mm256_loadu_ps(a + k * stride), w1 = _mm256_loadu_ps(a + k * stride + 8);
    const float* s = src + koff[k];
#pragma GCC unroll 6
    for (int j = 0; j < NP; ++j) {
      const __m256 x = _mm256_broadcast_ss(s + at[j]);
      acc[j][0] = _mm256_fmadd_ps(w0, x, acc[j][0]);
      acc[j][1] = _mm256_fmadd_ps(w1, x, acc[j][1]);
    }
  }
  for (int j = 0; j < NP; ++j)
    for (int h = 0; h < 2; ++h) _mm256_storeu_ps(tile + j * tile_stride + h * 8, acc[j][h]);
}

// SumBlocks on the AVX2 kernel: per channel block, per 16-channel group,
// tiles of 6 offsets; a last partial tile goes through a copy whose extra
// offsets repeat its last one.
MURMUR_TARGET_AVX2 void SumBlocksAvx2(std::int64_t channels, const float* a, std::int64_t kn,
                                      const float* src, const std::int32_t* koff, const std::int32_t* off,
                                      std::int64_t n, bool add, float* sum) {
  constexpr std::int64_t NP = kAvx2Offsets;
  alignas(32) float tile[NP * kLanes];
  std::int32_t last[NP];
  for (std::int64_t b = 0; b < Blocks(channels); ++b) {
    const std::int64_t width = Vectors(channels, b) * kLanes;
    for (std::int64_t group = 0; group < width; group += kLanes) {
      for (std::int64_t j0 = 0; j0 < n; j0 += NP) {
        const std::int64_t count = std::min(NP, n - j0);
        float* rows = sum + j0 * width + group;
        if (count == NP) {
          MicroAvx2(a + group, width, kn, src, koff, off + j0, add, rows, width);
          continue;
        }
        for (std::int64_t j = 0; j < NP; ++j) last[j] = off[j0 + std::min(j, count - 1)];
        std::fill(tile, tile + NP * kLanes, 0.0f);
        if (add)
          for (std::int64_t j = 0; j < count; ++j) std::copy_n(rows + j * width, kLanes, tile + j * kLanes);
        MicroAvx2(a + group, width, kn, src, koff, last, add, tile, kLanes);
        for (std::int64_t j = 0; j < count; ++j) std::copy_n(tile + j * kLanes, kLanes, rows + j * width);
      }
    }
    a += kn * width;
    sum += n * width;
  }
}

#endif

// The portable kernel: the same sums as the vector kernels, over the same
// packed layout, four offsets at a time; each output is the same fused
// multiply-adds in the same order, so it computes the same bits (and runs
// wherever no vector kernel does: aarch64, x86-64 CPUs without AVX2).
void SumBlocksGeneric(std::int64_t channels, const float* a, std::int64_t kn, const float* src,
                      const std::int32_t* koff, const std::int32_t* off, std::int64_t n, bool add,
                      float* sum) {
  constexpr std::int64_t NP = 4;
  float acc[NP][kBlock];
  for (std::int64_t b = 0; b < Blocks(channels); ++b) {
    const std::int64_t width = Vectors(channels, b) * kLanes;
    for (std::int64_t j0 = 0; j0 < n; j0 += NP) {
      const std::int64_t count = std::min(NP, n - j0);
      for (std::int64_t j = 0; j < count; ++j)
        for (std::int64_t c = 0; c < width; ++c) acc[j][c] = add ? sum[(j0 + j) * width + c] : 0.0f;
      for (std::int64_t k = 0; k < kn; ++k) {
        const float* ak = a + k * width;
        const float* s = src + koff[k];
        for (std::int64_t j = 0; j < count; ++j) {
          const float x = s[off[j0 + j]];
          for (std::int64_t c = 0; c < width; ++c) acc[j][c] = std::fma(ak[c], x, acc[j][c]);
        }
      }
      for (std::int64_t j = 0; j < count; ++j) std::copy_n(acc[j], width, sum + (j0 + j) * width);
    }
    a += kn * width;
    sum += n * width;
  }
}

// The sums of SumBlocks on the kernels of `level`.
void Sum(SimdLevel level, std::int64_t channels, const float* a, std::int64_t kn, const float* src,
         const std::int32_t* koff, const std::int32_t* off, std::int64_t n, bool add, float* sum) {
  switch (level) {
#if defined(__x86_64__)
    case SimdLevel::kAvx512: SumBlocks(channels, a, kn, src, koff, off, n, add, sum); return;
    case SimdLevel::kAvx2: SumBlocksAvx2(channels, a, kn, src, koff, off, n, add, sum); return;
#else
    case SimdLevel::kAvx512:
    case SimdLevel::kAvx2:
#endif
    case SimdLevel::kGeneric: break;
  }
  SumBlocksGeneric(channels, a, kn, src, koff, off, n, add, sum);
}

// The packed `channels` x n sum transposed back: out[c * n + j] =
// f(c, entry (c, j)), every channel's row written once.
template <typename F>
void Unpack(std::int64_t channels, std::int64_t n, const float* sum, float* out, F f) {
  for (std::int64_t b = 0; b < Blocks(channels); ++b) {
    const std::int64_t width = Vectors(channels, b) * kLanes;
    for (std::int64_t c = 0; c < BlockChannels(channels, b); ++c) {
      const std::int64_t channel = b * kBlock + c;
      float* row = out + channel * n;
      for (std::int64_t j = 0; j < n; ++j) row[j] = f(channel, sum[j * width + c]);
    }
    sum += n * width;
  }
}

// Copies the c x h x w tensor x into the inside of the zero-bordered c x hp x wp one at (top, left).
void PadInto(const float* x, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t hp, std::int64_t wp,
             std::int64_t top, std::int64_t left, float* out) {
  for (std::int64_t ch = 0; ch < c; ++ch)
    for (std::int64_t r = 0; r < h; ++r)
      std::memcpy(out + (ch * hp + r + top) * wp + left, x + (ch * h + r) * w,
                  static_cast<std::size_t>(w) * sizeof(float));
}

}  // namespace

bool DirectConv::Supports(const ConvGeometry& g) {
  return g.stride == 1 && g.pad < g.kernel && g.patch() >= kMinPatch;
}

DirectConv::DirectConv(const ConvGeometry& g) : g_(g), out_(g.out()), level_(ActiveSimd()) {
  MURMUR_CHECK(Supports(g));
  const std::int64_t k = g.kernel;
  hp_ = g.in.h + 2 * g.pad;
  wp_ = g.in.w + 2 * g.pad;
  hq_ = g.in.h + k - 1;
  wq_ = g.in.w + k - 1;
  for (std::int64_t c = 0; c < g.in.c; ++c)
    for (std::int64_t i = 0; i < k; ++i)
      for (std::int64_t j = 0; j < k; ++j)
        in_at_.push_back(static_cast<std::int32_t>((c * hp_ + i) * wp_ + j));
  for (std::int64_t y = 0; y < out_.h; ++y)
    for (std::int64_t x = 0; x < out_.w; ++x) out_at_.push_back(static_cast<std::int32_t>(y * wp_ + x));
  // Input gradient: dx(c, y, x) sums w(o, c, i, j) dy(o, y + pad - i, x + pad - j);
  // dy sits at (q, q) of its padded copy, so that index is (y + k - 1 - i, x + k - 1 - j).
  for (std::int64_t o = 0; o < out_.c; ++o)
    for (std::int64_t i = 0; i < k; ++i)
      for (std::int64_t j = 0; j < k; ++j)
        grad_at_.push_back(static_cast<std::int32_t>((o * hq_ + k - 1 - i) * wq_ + k - 1 - j));
  for (std::int64_t y = 0; y < g.in.h; ++y)
    for (std::int64_t x = 0; x < g.in.w; ++x) pixel_at_.push_back(static_cast<std::int32_t>(y * wq_ + x));
  forward_w_.resize(static_cast<std::size_t>(PackedSize(out_.c, g.patch())));
  input_w_.resize(static_cast<std::size_t>(PackedSize(g.in.c, out_.c * k * k)));
  x_pad_.assign(static_cast<std::size_t>(g.in.c * hp_ * wp_), 0.0f);  // the borders stay zero
  dy_pad_.assign(static_cast<std::size_t>(out_.c * hq_ * wq_), 0.0f);
  dy_t_.resize(static_cast<std::size_t>(PackedSize(out_.c, out_.h * out_.w)));
  dw_t_.resize(static_cast<std::size_t>(PackedSize(out_.c, g.patch())));
  sum_.resize(static_cast<std::size_t>(
      std::max(PackedSize(out_.c, out_.h * out_.w), PackedSize(g.in.c, g.in.h * g.in.w))));
}

void DirectConv::PackForward(const float* w) {
  const std::int64_t patch = g_.patch();
  Pack(
      out_.c, patch, [&](std::int64_t o, std::int64_t kk) { return w[o * patch + kk]; }, forward_w_.data());
}

void DirectConv::PackInputGradient(const float* w) {
  const std::int64_t kk = g_.kernel * g_.kernel, patch = g_.patch();
  // Row (o, i, j), channel c: w(o, c, i, j).
  Pack(
      g_.in.c, out_.c * kk,
      [&](std::int64_t c, std::int64_t row) { return w[(row / kk) * patch + c * kk + row % kk]; },
      input_w_.data());
}

void DirectConv::Forward(const float* x, const float* bias, bool relu, float* y) {
  PadInto(x, g_.in.c, g_.in.h, g_.in.w, hp_, wp_, g_.pad, g_.pad, x_pad_.data());
  const std::int64_t positions = out_.h * out_.w;
  Sum(level_, out_.c, forward_w_.data(), g_.patch(), x_pad_.data(), in_at_.data(), out_at_.data(), positions,
      /*add=*/false, sum_.data());
  // The bias and the ReLU as the output is written.
  Unpack(out_.c, positions, sum_.data(), y,
         [&](std::int64_t c, float v) { return relu ? std::max(v + bias[c], 0.0f) : v + bias[c]; });
}

void DirectConv::InputGradient(const float* dy, float* dx) {
  const std::int64_t q = g_.kernel - 1 - g_.pad;
  PadInto(dy, out_.c, out_.h, out_.w, hq_, wq_, q, q, dy_pad_.data());
  const std::int64_t positions = g_.in.h * g_.in.w;
  Sum(level_, g_.in.c, input_w_.data(), out_.c * g_.kernel * g_.kernel, dy_pad_.data(), grad_at_.data(),
      pixel_at_.data(), positions, /*add=*/false, sum_.data());
  Unpack(g_.in.c, positions, sum_.data(), dx, [](std::int64_t, float v) { return v; });
}

void DirectConv::AccumulateWeightGradient(const float* x, const float* dy, bool first) {
  PadInto(x, g_.in.c, g_.in.h, g_.in.w, hp_, wp_, g_.pad, g_.pad, x_pad_.data());
  const std::int64_t positions = out_.h * out_.w;
  Pack(
      out_.c, positions, [&](std::int64_t o, std::int64_t p) { return dy[o * positions + p]; }, dy_t_.data());
  Sum(level_, out_.c, dy_t_.data(), positions, x_pad_.data(), out_at_.data(), in_at_.data(), g_.patch(),
      !first, dw_t_.data());
}

void DirectConv::WriteWeightGradient(float* dw) const {
  Unpack(out_.c, g_.patch(), dw_t_.data(), dw, [](std::int64_t, float v) { return v; });
}

}  // namespace murmur::ml
