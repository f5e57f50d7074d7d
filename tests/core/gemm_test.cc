// core/gemm.h: every kernel level computes exactly the documented chain of
// fused multiply-adds (checked against a plain loop of std::fma, written
// here, for random shapes, strides, transposes and both modes), so all
// levels agree bit for bit; and the product is right against a sum in
// double within the chain's rounding bound.
#include "core/gemm.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include <Eigen/Core>

#include "core/rng.h"

namespace murmur {
namespace {

float At(const MatrixView& v, std::int64_t r, std::int64_t c) {
  return v.data[r * v.row_stride + c * v.col_stride];
}

// The definition, one output at a time.
void Chain(const MatrixView& a, const MatrixView& b, float* c, std::int64_t ldc, GemmMode mode) {
  for (std::int64_t i = 0; i < a.rows; ++i)
    for (std::int64_t j = 0; j < b.cols; ++j) {
      float s = mode == GemmMode::kAdd ? c[i * ldc + j] : 0.0f;
      for (std::int64_t k = 0; k < a.cols; ++k) s = std::fma(At(a, i, k), At(b, k, j), s);
      c[i * ldc + j] = s;
    }
}

TEST_CASE("every kernel level computes the chain of fused multiply-adds, bit for bit") {
  const ScopedSimdCap uncap(SimdLevel::kAvx512);
  Rng rng(11);
  int cases = 0;
  for (int trial = 0; trial < 400; ++trial) {
    CAPTURE(trial);
    // Shapes around the tiles (4 x 16, 6 x 16, 12 x 32) and the k block (256).
    const auto m = static_cast<std::int64_t>(1 + rng.UniformInt(40));
    const auto n = static_cast<std::int64_t>(1 + rng.UniformInt(70));
    const auto k = static_cast<std::int64_t>(rng.UniformInt(trial % 10 == 0 ? 700 : 80));
    const bool ta = rng.Uniform() < 0.5, tb = rng.Uniform() < 0.5;
    const GemmMode mode = rng.Uniform() < 0.5 ? GemmMode::kAdd : GemmMode::kSet;
    const std::int64_t pad =
        static_cast<std::int64_t>(rng.UniformInt(3));  // leading dimensions past the width
    const std::int64_t lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
    std::vector<float> a(static_cast<std::size_t>((ta ? k : m) * lda + 1));
    std::vector<float> b(static_cast<std::size_t>((tb ? n : k) * ldb + 1));
    std::vector<float> c0(static_cast<std::size_t>(m * ldc));
    for (float& v : a) v = static_cast<float>(rng.Normal());
    for (float& v : b) v = static_cast<float>(rng.Normal());
    for (float& v : c0) v = static_cast<float>(rng.Normal());
    const MatrixView av =
        ta ? MatrixView::RowMajor(a.data(), k, m, lda).T() : MatrixView::RowMajor(a.data(), m, k, lda);
    const MatrixView bv =
        tb ? MatrixView::RowMajor(b.data(), n, k, ldb).T() : MatrixView::RowMajor(b.data(), k, n, ldb);
    std::vector<float> want = c0;
    Chain(av, bv, want.data(), ldc, mode);
    for (SimdLevel level : SupportedSimdLevels()) {
      CAPTURE(SimdName(level));
      std::vector<float> got = c0;
      Gemm(level, av, bv, got.data(), ldc, mode);
      for (std::int64_t i = 0; i < m; ++i) {
        // Outputs compared as bits; the padding past each row is untouched.
        REQUIRE(std::memcmp(got.data() + i * ldc, want.data() + i * ldc, static_cast<std::size_t>(ldc) * 4) ==
                0);
      }
      CapSimd(level);
      std::vector<float> active = c0;
      Gemm(av, bv, active.data(), ldc, mode);
      CapSimd(SimdLevel::kAvx512);
      REQUIRE(std::memcmp(active.data(), want.data(), want.size() * 4) == 0);
      ++cases;
    }
  }
  CHECK(cases >= 400);
}

TEST_CASE("the product is within the fused chain's rounding bound of the exact one") {
  // |fl(chain) - exact| <= k u sum |a b| (Higham, Accuracy and Stability of
  // Numerical Algorithms, 2nd ed., eq. 3.5 with one rounding per step),
  // u = 2^-24; the exact sum is taken in long double of doubles.
  Rng rng(3);
  const std::int64_t m = 37, n = 45, k = 1000;
  std::vector<float> a(m * k), b(k * n), c(m * n);
  for (float& v : a) v = static_cast<float>(rng.Uniform(-1, 1));
  for (float& v : b) v = static_cast<float>(rng.Uniform(-1, 1));
  Gemm(MatrixView::RowMajor(a.data(), m, k), MatrixView::RowMajor(b.data(), k, n), c.data(), n,
       GemmMode::kSet);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      long double exact = 0, abs = 0;
      for (std::int64_t q = 0; q < k; ++q) {
        exact += static_cast<long double>(a[i * k + q]) * b[q * n + j];
        abs += std::fabs(static_cast<long double>(a[i * k + q]) * b[q * n + j]);
      }
      CHECK(std::fabs(static_cast<long double>(c[i * n + j]) - exact) <= k * 0x1p-24L * abs);
    }
}

TEST_CASE("edge shapes: an empty k sets zeros or keeps C, an empty m or n touches nothing") {
  std::vector<float> c = {1, 2, 3, 4};
  const float none = 0;
  Gemm(MatrixView::RowMajor(&none, 2, 0), MatrixView::RowMajor(&none, 0, 2), c.data(), 2, GemmMode::kAdd);
  CHECK(c == std::vector<float>{1, 2, 3, 4});
  Gemm(MatrixView::RowMajor(&none, 2, 0), MatrixView::RowMajor(&none, 0, 2), c.data(), 2, GemmMode::kSet);
  CHECK(c == std::vector<float>{0, 0, 0, 0});
  c = {5, 6, 7, 8};
  Gemm(MatrixView::RowMajor(&none, 0, 3), MatrixView::RowMajor(&none, 3, 2), c.data(), 2, GemmMode::kSet);
  CHECK(c == std::vector<float>{5, 6, 7, 8});
}

TEST_CASE("Eigen's products depend on the cache sizes it reads, and PinEigenBlocking removes that") {
  using RowMatrixXf = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Rng rng(2);
  RowMatrixXf a(32, 784), b(784, 128);
  for (Eigen::Index i = 0; i < a.size(); ++i) a.data()[i] = static_cast<float>(rng.Normal());
  for (Eigen::Index i = 0; i < b.size(); ++i) b.data()[i] = static_cast<float>(rng.Normal());
  auto product = [&] {
    RowMatrixXf c = a * b;
    return std::vector<float>(c.data(), c.data() + c.size());
  };
  // What Eigen reads on an AMD EPYC (Zen 4) and on an Intel Xeon (Sapphire
  // Rapids): 32 KiB / 1 MiB and 48 KiB / 2 MiB of first and second level.
  Eigen::setCpuCacheSizes(32 << 10, 1 << 20, 32 << 20);
  const std::vector<float> amd = product();
  Eigen::setCpuCacheSizes(48 << 10, 2 << 20, 105 << 20);
  const std::vector<float> intel = product();
  WARN(std::memcmp(amd.data(), intel.data(), amd.size() * 4) !=
       0);  // the reason for all this (x86-64: they differ)
  PinEigenBlocking();
  const std::vector<float> pinned = product();
  Eigen::setCpuCacheSizes(48 << 10, 2 << 20, 105 << 20);
  PinEigenBlocking();
  CHECK(std::memcmp(pinned.data(), product().data(), pinned.size() * 4) == 0);
  // murmur's own product is the chain whatever Eigen was told.
  std::vector<float> c(32 * 128), d(32 * 128);
  Gemm(MatrixView::RowMajor(a.data(), 32, 784), MatrixView::RowMajor(b.data(), 784, 128), c.data(), 128,
       GemmMode::kSet);
  Eigen::setCpuCacheSizes(32 << 10, 1 << 20, 32 << 20);
  Gemm(MatrixView::RowMajor(a.data(), 32, 784), MatrixView::RowMajor(b.data(), 784, 128), d.data(), 128,
       GemmMode::kSet);
  CHECK(c == d);
  PinEigenBlocking();
}

}  // namespace
}  // namespace murmur
