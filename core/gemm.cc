#include "core/gemm.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>
#include <vector>

#include "core/check.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

// Written by hand rather than taken from a BLAS: a BLAS (Eigen's product,
// OpenBLAS, MKL) chooses its blocking over k, and so the order of each
// output's sum, from the CPU it runs on, which is what made the same
// binary print other numbers on an AMD EPYC than on an Intel Xeon. The
// kernels here are small because the chain above leaves them one freedom:
// how many chains run side by side.

namespace murmur {
namespace {

// Rows of B a k block spans: 64 rows of a 128-column B are 32 KiB, which
// stay in the first two cache levels while the tiles of A pass; short
// blocks also let the next block's rows be fetched (prefetched) while this
// one is used, which is what a model read from memory needs (the forward
// product of one of 64 nodes' MLPs, 784 x 128 weights, ran at 58 GFLOP/s
// with blocks of 256 rows and no prefetch, 81 GFLOP/s with these, on one
// core of an AMD EPYC whose FMA peak is 118).
constexpr std::int64_t kKc = 64;

// What one tile computes: rows x cols outputs (rows <= MR, cols <= NR of the
// level), their chains over kn entries of k from `ap` (the packed tile,
// a[k][r] at ap[k * rows + r]) and `b` (row k at b + k * ldb), continued
// from C with `add`, else started at +0.
struct Tile {
  const float* ap;
  std::int64_t lda;  // A read in place: its stride (row-major: between rows; transposed: between columns)
  const float* b;
  std::int64_t ldb, kn, cols;
  float* c;
  std::int64_t ldc;
  bool add;
};

// Where a tile reads A(r, k) of its rows: a packed copy, or A itself when
// one of its strides is 1 (no copy).
enum class ALayout {
  kPacked,   // ap[k * MR + r]
  kRows,     // row-major A: ap[r * lda + k]
  kColumns,  // transposed A (column-major): ap[k * lda + r]
};

// --- portable C++: 4 x 16 tiles. std::fma is one rounding everywhere; where
// the build's baseline has FMA (aarch64, -march=native) the compiler turns
// the lane loops into vector FMAs.
constexpr int kGenericRows = 4;
constexpr int kGenericCols = 16;

// One full tile: every B row holds kGenericCols floats at t.b + k * t.ldb
// and C's rows as many at t.c + r * t.ldc.
template <int MR>
void GenericFullTile(const Tile& t) {
  float acc[MR][kGenericCols];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
    for (int l = 0; l < kGenericCols; ++l) acc[r][l] = t.add ? t.c[r * t.ldc + l] : 0.0f;
  for (std::int64_t k = 0; k < t.kn; ++k) {
    const float* b = t.b + k * t.ldb;
    const float* a = t.ap + k * MR;
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r)
      for (int l = 0; l < kGenericCols; ++l) acc[r][l] = std::fma(a[r], b[l], acc[r][l]);
  }
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
    for (int l = 0; l < kGenericCols; ++l) t.c[r * t.ldc + l] = acc[r][l];
}

// A tile of fewer columns runs as a full one on copies padded with zeros.
template <int MR>
void GenericTile(const Tile& t) {
  if (t.cols == kGenericCols) {
    GenericFullTile<MR>(t);
    return;
  }
  thread_local std::vector<float> b;
  b.assign(static_cast<std::size_t>(t.kn * kGenericCols), 0.0f);
  for (std::int64_t k = 0; k < t.kn; ++k) std::copy_n(t.b + k * t.ldb, t.cols, b.data() + k * kGenericCols);
  float c[MR * kGenericCols] = {};
  for (int r = 0; r < MR; ++r) std::copy_n(t.c + r * t.ldc, t.add ? t.cols : 0, c + r * kGenericCols);
  Tile full = t;
  full.b = b.data();
  full.ldb = kGenericCols;
  full.c = c;
  full.ldc = kGenericCols;
  GenericFullTile<MR>(full);
  for (int r = 0; r < MR; ++r) std::copy_n(c + r * kGenericCols, t.cols, t.c + r * t.ldc);
}

#if defined(__x86_64__)
// --- AVX2 with FMA: 6 x 16 tiles, 12 accumulators of 8 lanes.
constexpr int kAvx2Rows = 6;
constexpr int kAvx2Cols = 16;

MURMUR_TARGET_AVX2 inline __m256i LaneMask8(std::int64_t valid) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::clamp<std::int64_t>(valid, 0, 8))),
                            lanes);
}

template <int MR, ALayout kA>
MURMUR_TARGET_AVX2 void Avx2Tile(const Tile& t) {
  const __m256i m0 = LaneMask8(t.cols), m1 = LaneMask8(t.cols - 8);
  __m256 acc0[MR], acc1[MR];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    acc0[r] = t.add ? _mm256_maskload_ps(t.c + r * t.ldc, m0) : _mm256_setzero_ps();
    acc1[r] = t.add ? _mm256_maskload_ps(t.c + r * t.ldc + 8, m1) : _mm256_setzero_ps();
  }
  const float* rows[MR];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) rows[r] = t.ap + r * t.lda;
  for (std::int64_t k = 0; k < t.kn; ++k) {
    const __m256 b0 = _mm256_maskload_ps(t.b + k * t.ldb, m0);
    const __m256 b1 = _mm256_maskload_ps(t.b + k * t.ldb + 8, m1);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const float* at = kA == ALayout::kRows      ? rows[r] + k
                        : kA == ALayout::kColumns ? t.ap + k * t.lda + r
                                                  : t.ap + k * MR + r;
      const __m256 x = _mm256_broadcast_ss(at);
      acc0[r] = _mm256_fmadd_ps(x, b0, acc0[r]);
      acc1[r] = _mm256_fmadd_ps(x, b1, acc1[r]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    _mm256_maskstore_ps(t.c + r * t.ldc, m0, acc0[r]);
    _mm256_maskstore_ps(t.c + r * t.ldc + 8, m1, acc1[r]);
  }
}

// --- AVX-512F: 12 x 32 tiles, 24 accumulators of 16 lanes; per k two
// loads of B, 12 broadcasts of A and 24 fused multiply-adds.
constexpr int kAvx512Rows = 12;
constexpr int kAvx512Cols = 32;

inline __mmask16 LaneMask16(std::int64_t valid) {
  if (valid >= 16) return static_cast<__mmask16>(0xFFFF);
  if (valid <= 0) return 0;
  return static_cast<__mmask16>((1u << valid) - 1);
}

template <int MR, ALayout kA>
MURMUR_TARGET_AVX512 void Avx512Tile(const Tile& t) {
  const __mmask16 m0 = LaneMask16(t.cols), m1 = LaneMask16(t.cols - 16);
  __m512 acc0[MR], acc1[MR];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    acc0[r] = t.add ? _mm512_maskz_loadu_ps(m0, t.c + r * t.ldc) : _mm512_setzero_ps();
    acc1[r] = t.add ? _mm512_maskz_loadu_ps(m1, t.c + r * t.ldc + 16) : _mm512_setzero_ps();
  }
  const float* rows[MR];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) rows[r] = t.ap + r * t.lda;
  auto a_at = [&](std::int64_t k, int r) {
    return kA == ALayout::kRows      ? rows[r][k]
           : kA == ALayout::kColumns ? t.ap[k * t.lda + r]
                                     : t.ap[k * MR + r];
  };
  if (m1 == 0) {
    // At most 16 columns: half the multiply-adds.
    for (std::int64_t k = 0; k < t.kn; ++k) {
      const __m512 b0 = _mm512_maskz_loadu_ps(m0, t.b + k * t.ldb);
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) acc0[r] = _mm512_fmadd_ps(_mm512_set1_ps(a_at(k, r)), b0, acc0[r]);
    }
  } else {
    for (std::int64_t k = 0; k < t.kn; ++k) {
      const __m512 b0 = _mm512_maskz_loadu_ps(m0, t.b + k * t.ldb);
      const __m512 b1 = _mm512_maskz_loadu_ps(m1, t.b + k * t.ldb + 16);
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) {
        const __m512 x = _mm512_set1_ps(a_at(k, r));
        acc0[r] = _mm512_fmadd_ps(x, b0, acc0[r]);
        acc1[r] = _mm512_fmadd_ps(x, b1, acc1[r]);
      }
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    _mm512_mask_storeu_ps(t.c + r * t.ldc, m0, acc0[r]);
    _mm512_mask_storeu_ps(t.c + r * t.ldc + 16, m1, acc1[r]);
  }
}
#endif

using TileFn = void (*)(const Tile&);

// The tile functions of one kernel, by row count 1 .. MR.
template <template <int> class K, int MR>
struct TileTable {
  template <std::size_t... R>
  static constexpr std::array<TileFn, MR> Make(std::index_sequence<R...>) {
    return {&K<static_cast<int>(R) + 1>::Run...};
  }
  static constexpr std::array<TileFn, MR> kFns = Make(std::make_index_sequence<MR>{});
};

template <int MR>
struct GenericK {
  static void Run(const Tile& t) { GenericTile<MR>(t); }
};
#if defined(__x86_64__)
template <ALayout kA>
struct Avx2K {
  template <int MR>
  struct Rows {
    static void Run(const Tile& t) { Avx2Tile<MR, kA>(t); }
  };
};
template <ALayout kA>
struct Avx512K {
  template <int MR>
  struct Rows {
    static void Run(const Tile& t) { Avx512Tile<MR, kA>(t); }
  };
};
#endif

struct Kernel {
  int rows, cols;
  // tiles[layout][r - 1] computes r rows with A in that layout (ALayout's
  // order); null where the kernel only reads a packed A.
  std::array<const TileFn*, 3> tiles;
};

Kernel KernelOf(SimdLevel level) {
  switch (level) {
#if defined(__x86_64__)
    case SimdLevel::kAvx512:
      return {kAvx512Rows,
              kAvx512Cols,
              {TileTable<Avx512K<ALayout::kPacked>::Rows, kAvx512Rows>::kFns.data(),
               TileTable<Avx512K<ALayout::kRows>::Rows, kAvx512Rows>::kFns.data(),
               TileTable<Avx512K<ALayout::kColumns>::Rows, kAvx512Rows>::kFns.data()}};
    case SimdLevel::kAvx2:
      return {kAvx2Rows,
              kAvx2Cols,
              {TileTable<Avx2K<ALayout::kPacked>::Rows, kAvx2Rows>::kFns.data(),
               TileTable<Avx2K<ALayout::kRows>::Rows, kAvx2Rows>::kFns.data(),
               TileTable<Avx2K<ALayout::kColumns>::Rows, kAvx2Rows>::kFns.data()}};
#else
    case SimdLevel::kAvx512:
    case SimdLevel::kAvx2:
#endif
    case SimdLevel::kGeneric: break;
  }
  return {kGenericRows, kGenericCols, {TileTable<GenericK, kGenericRows>::kFns.data(), nullptr, nullptr}};
}

// Per-thread scratch: A packed tile by tile, B copied row-major when its
// columns are strided.
struct Scratch {
  std::vector<float> a, b, t;  // A packed, B copied, C transposed
};

Scratch& ThreadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

// Packs A tile by tile: the tile of rows [i0, i0 + rows) at out + i0 * k,
// entry (r, kk) at kk * rows + r, so that a tile's k-th column is `rows`
// consecutive floats. Whichever of A's strides is 1 is walked innermost.
void PackA(const MatrixView& a, int mr, float* out) {
  const std::int64_t k = a.cols;
  for (std::int64_t i0 = 0; i0 < a.rows; i0 += mr) {
    const std::int64_t rows = std::min<std::int64_t>(mr, a.rows - i0);
    float* tile = out + i0 * k;
    const float* src = a.data + i0 * a.row_stride;
    if (a.row_stride == 1) {  // A transposed: a tile's column is contiguous
      for (std::int64_t kk = 0; kk < k; ++kk)
        for (std::int64_t r = 0; r < rows; ++r) tile[kk * rows + r] = src[kk * a.col_stride + r];
    } else {
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t kk = 0; kk < k; ++kk)
          tile[kk * rows + r] = src[r * a.row_stride + kk * a.col_stride];
    }
  }
}

// Copies the strided `from` to the row-major out (from.rows x from.cols,
// rows `ld` floats apart), in blocks of 16 x 16 so that the strided side of
// the copy stays within a few cache lines.
void CopyBlocked(const MatrixView& from, float* out, std::int64_t ld) {
  constexpr std::int64_t kBlock = 16;
  for (std::int64_t r0 = 0; r0 < from.rows; r0 += kBlock)
    for (std::int64_t c0 = 0; c0 < from.cols; c0 += kBlock) {
      const std::int64_t r1 = std::min(from.rows, r0 + kBlock), c1 = std::min(from.cols, c0 + kBlock);
      for (std::int64_t c = c0; c < c1; ++c)
        for (std::int64_t r = r0; r < r1; ++r)
          out[r * ld + c] = from.data[r * from.row_stride + c * from.col_stride];
    }
}

}  // namespace

void Gemm(SimdLevel level, const MatrixView& a, const MatrixView& b, float* c, std::int64_t ldc,
          GemmMode mode) {
  MURMUR_CHECK(a.cols == b.rows && ldc >= b.cols && a.rows >= 0 && b.cols >= 0);
  const std::int64_t m = a.rows, n = b.cols, k = a.cols;
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (mode == GemmMode::kSet)
      for (std::int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  level = std::min(level, SupportedSimd());
  const Kernel kernel = KernelOf(level);
  Scratch& scratch = ThreadScratch();
  if (b.col_stride != 1 && a.col_stride == 1 && k * n > k * m + 2 * m * n) {
    // B's rows are strided (B = W^T of a row-major W) and copying B costs
    // more than copying A and C: compute C^T = B^T A^T instead, whose left
    // operand W is read in place. Every output is the same chain (the same
    // products in the same order of k), so the same bits.
    std::vector<float>& t = scratch.t;
    t.resize(static_cast<std::size_t>(n * m));
    const MatrixView c_view = MatrixView::RowMajor(c, m, n, ldc);
    if (mode == GemmMode::kAdd) CopyBlocked(c_view.T(), t.data(), m);
    std::vector<float> held;
    held.swap(t);  // the inner call may use this thread's scratch
    Gemm(level, b.T(), a.T(), held.data(), m, mode);
    CopyBlocked(MatrixView::RowMajor(held.data(), n, m).T(), c, ldc);
    held.swap(scratch.t);
    return;
  }
  // A is read in place where one of its strides is 1 and the kernel can;
  // otherwise packed.
  ALayout layout = a.col_stride == 1   ? ALayout::kRows
                   : a.row_stride == 1 ? ALayout::kColumns
                                       : ALayout::kPacked;
  if (kernel.tiles[static_cast<int>(layout)] == nullptr) layout = ALayout::kPacked;
  const TileFn* tiles = kernel.tiles[static_cast<int>(layout)];
  if (layout == ALayout::kPacked) {
    scratch.a.resize(static_cast<std::size_t>(m * k));
    PackA(a, kernel.rows, scratch.a.data());
  }
  const float* bp = b.data;
  std::int64_t ldb = b.row_stride;
  if (b.col_stride != 1) {
    scratch.b.resize(static_cast<std::size_t>(k * n));
    CopyBlocked(b, scratch.b.data(), n);
    bp = scratch.b.data();
    ldb = n;
  }
  // Blocks of kKc rows of B, each swept whole (its rows are read in order,
  // which the prefetchers follow even when B comes from memory: a model of
  // another node) by every tile of rows of A in turn, so that the block
  // stays in the second cache level for the tiles after the first.
  for (std::int64_t k0 = 0; k0 < k; k0 += kKc) {
    const std::int64_t kn = std::min(kKc, k - k0);
    const bool add = mode == GemmMode::kAdd || k0 > 0;
    for (std::int64_t i0 = 0; i0 < m; i0 += kernel.rows) {
      const std::int64_t rows = std::min<std::int64_t>(kernel.rows, m - i0);
      const TileFn tile_fn = tiles[rows - 1];
      Tile tile{layout == ALayout::kPacked ? scratch.a.data() + i0 * k + k0 * rows
                : layout == ALayout::kRows ? a.data + i0 * a.row_stride + k0
                                           : a.data + i0 + k0 * a.col_stride,
                layout == ALayout::kRows ? a.row_stride : a.col_stride,
                nullptr,
                ldb,
                kn,
                0,
                nullptr,
                ldc,
                add};
      for (std::int64_t j0 = 0; j0 < n; j0 += kernel.cols) {
        tile.b = bp + k0 * ldb + j0;
        tile.cols = std::min<std::int64_t>(kernel.cols, n - j0);
        tile.c = c + i0 * ldc + j0;
        if (i0 == 0) {
          // The first tile of rows asks for the same columns of the next
          // block, so that they are on their way while this block is used.
          const std::int64_t next = std::min(k, k0 + 2 * kKc);
          for (std::int64_t kk = k0 + kKc; kk < next; ++kk)
            for (std::int64_t j = 0; j < tile.cols; j += 16) __builtin_prefetch(bp + kk * ldb + j0 + j, 0, 2);
        }
        tile_fn(tile);
      }
    }
  }
}

void Gemm(const MatrixView& a, const MatrixView& b, float* c, std::int64_t ldc, GemmMode mode) {
  Gemm(ActiveSimd(), a, b, c, ldc, mode);
}

}  // namespace murmur
