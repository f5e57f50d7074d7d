#include "ml/direct_conv.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"

#if defined(__AVX512F__)
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

#if defined(__AVX512F__)
// One tile: acc[j][v] = sum over k of a[k][v] * src[koff[k] + off[j]],
// starting from tile[j][v] with `add` (else from zero), written to
// tile[j][v]. NP x V accumulators stay in registers.
template <int V, int NP>
void Micro(const float* a, std::int64_t kn, const float* src, const std::int32_t* koff,
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

// Runs the tiles of n offsets `off` (a last partial tile repeats its last
// offset; those results are not stored), handing each to store(tile, first
// offset, count).
template <int V, int NP, typename Store>
void Tiles(const float* a, std::int64_t kn, const float* src, const std::int32_t* koff,
           const std::int32_t* off, std::int64_t n, Store store) {
  alignas(64) float tile[NP * V * kLanes];
  std::int32_t last[NP];
  for (std::int64_t j0 = 0; j0 < n; j0 += NP) {
    const std::int64_t count = std::min<std::int64_t>(NP, n - j0);
    const std::int32_t* o = off + j0;
    if (count < NP) {
      for (std::int64_t j = 0; j < NP; ++j) last[j] = off[j0 + std::min(j, count - 1)];
      o = last;
    }
    Micro<V, NP>(a, kn, src, koff, o, /*add=*/false, tile);
    store(tile, j0, count);
  }
}

// The tiles of n offsets added into `sum` (n rows of V x 16, row j for
// offset j): each tile reads and writes its rows in place, a last partial
// tile through a copy.
template <int V, int NP>
void SumTiles(const float* a, std::int64_t kn, const float* src, const std::int32_t* koff,
              const std::int32_t* off, std::int64_t n, bool add, float* sum) {
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
    std::copy_n(sum + j0 * row, count * row, tile);
    Micro<V, NP>(a, kn, src, koff, last, add, tile);
    std::copy_n(tile, count * row, sum + j0 * row);
  }
}

// The tiles of one channel block, its vectors chosen at run time; the tile
// widths keep 28 accumulators (27 for 3 vectors) in the 32 registers.
template <typename Store>
void BlockTiles(std::int64_t vectors, const float* a, std::int64_t kn, const float* src,
                const std::int32_t* koff, const std::int32_t* off, std::int64_t n, Store store) {
  switch (vectors) {
    case 1: return Tiles<1, 28>(a, kn, src, koff, off, n, store);
    case 2: return Tiles<2, 14>(a, kn, src, koff, off, n, store);
    case 3: return Tiles<3, 9>(a, kn, src, koff, off, n, store);
    default: return Tiles<4, 7>(a, kn, src, koff, off, n, store);
  }
}

void BlockSumTiles(std::int64_t vectors, const float* a, std::int64_t kn, const float* src,
                   const std::int32_t* koff, const std::int32_t* off, std::int64_t n, bool add, float* sum) {
  switch (vectors) {
    case 1: return SumTiles<1, 28>(a, kn, src, koff, off, n, add, sum);
    case 2: return SumTiles<2, 14>(a, kn, src, koff, off, n, add, sum);
    case 3: return SumTiles<3, 9>(a, kn, src, koff, off, n, add, sum);
    default: return SumTiles<4, 7>(a, kn, src, koff, off, n, add, sum);
  }
}

// For every channel block of the packed `a` (channels x kn): the tiles, and
// store(tile, row width, first channel, channels, first offset, count).
template <typename Store>
void Run(std::int64_t channels, const float* a, std::int64_t kn, const float* src, const std::int32_t* koff,
         const std::int32_t* off, std::int64_t n, Store store) {
  for (std::int64_t b = 0; b < Blocks(channels); ++b) {
    const std::int64_t vectors = Vectors(channels, b), width = vectors * kLanes;
    const std::int64_t first = b * kBlock, count = BlockChannels(channels, b);
    BlockTiles(vectors, a, kn, src, koff, off, n, [&](const float* tile, std::int64_t j0, std::int64_t m) {
      store(tile, width, first, count, j0, m);
    });
    a += kn * width;
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

#endif

}  // namespace

bool DirectConv::Supports(const ConvGeometry& g) {
#if defined(__AVX512F__)
  return g.stride == 1 && g.pad < g.kernel && g.patch() >= kMinPatch;
#else
  (void)g;
  return false;
#endif
}

DirectConv::DirectConv(const ConvGeometry& g) : g_(g), out_(g.out()) {
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

#if defined(__AVX512F__)
void DirectConv::Forward(const float* x, const float* bias, bool relu, float* y) {
  PadInto(x, g_.in.c, g_.in.h, g_.in.w, hp_, wp_, g_.pad, g_.pad, x_pad_.data());
  const std::int64_t positions = out_.h * out_.w;
  Run(out_.c, forward_w_.data(), g_.patch(), x_pad_.data(), in_at_.data(), out_at_.data(), positions,
      [&](const float* tile, std::int64_t width, std::int64_t first, std::int64_t count, std::int64_t j0,
          std::int64_t m) {
        for (std::int64_t c = 0; c < count; ++c) {
          float* row = y + (first + c) * positions + j0;
          const float b = bias[first + c];
          if (relu) {
            for (std::int64_t j = 0; j < m; ++j) row[j] = std::max(tile[j * width + c] + b, 0.0f);
          } else {
            for (std::int64_t j = 0; j < m; ++j) row[j] = tile[j * width + c] + b;
          }
        }
      });
}

void DirectConv::InputGradient(const float* dy, float* dx) {
  const std::int64_t q = g_.kernel - 1 - g_.pad;
  PadInto(dy, out_.c, out_.h, out_.w, hq_, wq_, q, q, dy_pad_.data());
  const std::int64_t positions = g_.in.h * g_.in.w;
  Run(g_.in.c, input_w_.data(), out_.c * g_.kernel * g_.kernel, dy_pad_.data(), grad_at_.data(),
      pixel_at_.data(), positions,
      [&](const float* tile, std::int64_t width, std::int64_t first, std::int64_t count, std::int64_t j0,
          std::int64_t m) {
        for (std::int64_t c = 0; c < count; ++c) {
          float* row = dx + (first + c) * positions + j0;
          for (std::int64_t j = 0; j < m; ++j) row[j] = tile[j * width + c];
        }
      });
}

void DirectConv::AccumulateWeightGradient(const float* x, const float* dy, bool first) {
  PadInto(x, g_.in.c, g_.in.h, g_.in.w, hp_, wp_, g_.pad, g_.pad, x_pad_.data());
  const std::int64_t positions = out_.h * out_.w, patch = g_.patch();
  Pack(
      out_.c, positions, [&](std::int64_t o, std::int64_t p) { return dy[o * positions + p]; }, dy_t_.data());
  const float* a = dy_t_.data();
  float* sum = dw_t_.data();
  for (std::int64_t b = 0; b < Blocks(out_.c); ++b) {
    const std::int64_t vectors = Vectors(out_.c, b);
    BlockSumTiles(vectors, a, positions, x_pad_.data(), out_at_.data(), in_at_.data(), patch, !first, sum);
    a += positions * vectors * kLanes;
    sum += patch * vectors * kLanes;
  }
}

void DirectConv::WriteWeightGradient(float* dw) const {
  const std::int64_t patch = g_.patch();
  const float* sum = dw_t_.data();
  for (std::int64_t b = 0; b < Blocks(out_.c); ++b) {
    const std::int64_t width = Vectors(out_.c, b) * kLanes;
    for (std::int64_t c = 0; c < BlockChannels(out_.c, b); ++c) {
      float* row = dw + (b * kBlock + c) * patch;
      for (std::int64_t k = 0; k < patch; ++k) row[k] = sum[k * width + c];
    }
    sum += patch * width;
  }
}
#else
void DirectConv::Forward(const float*, const float*, bool, float*) { MURMUR_CHECK(false); }
void DirectConv::InputGradient(const float*, float*) { MURMUR_CHECK(false); }
void DirectConv::AccumulateWeightGradient(const float*, const float*, bool) { MURMUR_CHECK(false); }
void DirectConv::WriteWeightGradient(float*) const { MURMUR_CHECK(false); }
#endif

}  // namespace murmur::ml
