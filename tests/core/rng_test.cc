#include "core/rng.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

namespace murmur {
namespace {

// Known-answer vectors published with Random123 (Salmon et al. 2011), kat_vectors.
TEST_CASE("Philox4x32-10 matches the Random123 known-answer vectors") {
  using A4 = std::array<std::uint32_t, 4>;
  CHECK(Philox4x32_10({0, 0, 0, 0}, {0, 0}) == A4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  CHECK(Philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}) ==
        A4{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  CHECK(Philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}) ==
        A4{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

TEST_CASE("A stream is a pure function of its key") {
  Rng a(42, 7, RngPurpose::kBatch), b(42, 7, RngPurpose::kBatch);
  for (int i = 0; i < 1000; ++i) REQUIRE(a.NextU64() == b.NextU64());
  Rng f1 = Rng(42, 7, RngPurpose::kBatch).Fork(3), f2 = Rng(42, 7, RngPurpose::kBatch).Fork(3);
  for (int i = 0; i < 100; ++i) REQUIRE(f1.NextU32() == f2.NextU32());
}

// Pearson correlation of paired uniforms from two streams: for independent
// streams it is ~N(0, 1/n); |r| < 5/sqrt(n) fails with probability < 1e-6.
double Correlation(Rng a, Rng b, int n) {
  double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
  for (int i = 0; i < n; ++i) {
    double x = a.Uniform(), y = b.Uniform();
    sa += x, sb += y, saa += x * x, sbb += y * y, sab += x * y;
  }
  double cov = sab / n - (sa / n) * (sb / n);
  return cov / std::sqrt((saa / n - sa * sa / n / n) * (sbb / n - sb * sb / n / n));
}

TEST_CASE("Streams of neighbouring seeds, nodes, purposes and forks are uncorrelated") {
  const int n = 100000;
  const double bound = 5.0 / std::sqrt(n);
  CHECK(std::abs(Correlation(Rng(1, 0, 0u), Rng(2, 0, 0u), n)) < bound);
  CHECK(std::abs(Correlation(Rng(1, 0, 0u), Rng(1, 1, 0u), n)) < bound);
  CHECK(std::abs(Correlation(Rng(1, 0, 0u), Rng(1, 0, 1u), n)) < bound);
  CHECK(std::abs(Correlation(Rng(1, 5, 2u), Rng(1, 5, 2u).Fork(0), n)) < bound);
  CHECK(std::abs(Correlation(Rng(1, 5, 2u).Fork(0), Rng(1, 5, 2u).Fork(1), n)) < bound);
  // And different keys never produce the same first block.
  CHECK(Rng(1, 0, 0u).NextU64() != Rng(1, 1, 0u).NextU64());
}

TEST_CASE("Uniform, Normal, Gamma and Exponential have the right moments") {
  Rng rng(2024, 0, RngPurpose::kGeneric);
  const int n = 200000;
  // Uniform: mean 1/2, variance 1/12; standard error of the mean ~ 0.00065.
  double s = 0, s2 = 0;
  for (int i = 0; i < n; ++i) {
    double u = rng.Uniform();
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    s += u, s2 += u * u;
  }
  CHECK(s / n == doctest::Approx(0.5).epsilon(0.01));
  CHECK(s2 / n - (s / n) * (s / n) == doctest::Approx(1.0 / 12).epsilon(0.01));
  // Normal: mean 0, variance 1, kurtosis 3.
  double m1 = 0, m2 = 0, m4 = 0;
  for (int i = 0; i < n; ++i) {
    double z = rng.Normal();
    m1 += z, m2 += z * z, m4 += z * z * z * z;
  }
  CHECK(std::abs(m1 / n) < 0.01);
  CHECK(m2 / n == doctest::Approx(1.0).epsilon(0.01));
  CHECK(m4 / n == doctest::Approx(3.0).epsilon(0.03));
  // Gamma(k): mean k, variance k (both for k < 1 and k >= 1).
  for (double k : {0.3, 1.0, 4.5}) {
    CAPTURE(k);
    double g = 0, g2 = 0;
    for (int i = 0; i < n; ++i) {
      double x = rng.Gamma(k);
      g += x, g2 += x * x;
    }
    CHECK(g / n == doctest::Approx(k).epsilon(0.02));
    CHECK(g2 / n - (g / n) * (g / n) == doctest::Approx(k).epsilon(0.05));
  }
  double e = 0;
  for (int i = 0; i < n; ++i) e += rng.Exponential(4.0);
  CHECK(e / n == doctest::Approx(0.25).epsilon(0.01));
}

TEST_CASE("UniformInt is unbiased: chi-square over 10 bins") {
  Rng rng(9, 0, RngPurpose::kGeneric);
  const int n = 100000, k = 10;
  std::vector<int> counts(k, 0);
  for (int i = 0; i < n; ++i) {
    std::uint64_t v = rng.UniformInt(k);
    REQUIRE(v < static_cast<std::uint64_t>(k));
    ++counts[v];
  }
  double chi2 = 0, expect = static_cast<double>(n) / k;
  for (int c : counts) chi2 += (c - expect) * (c - expect) / expect;
  // 9 degrees of freedom: P(chi2 > 33.7) < 1e-4.
  CHECK(chi2 < 33.7);
}

TEST_CASE("Shuffle is a permutation") {
  Rng rng(3);
  std::vector<int> v(1000);
  for (int i = 0; i < 1000; ++i) v[i] = i;
  rng.Shuffle(std::span<int>(v));
  std::vector<int> seen(1000, 0);
  int fixed_points = 0;
  for (int i = 0; i < 1000; ++i) {
    ++seen[v[i]];
    fixed_points += v[i] == i;
  }
  for (int c : seen) REQUIRE(c == 1);
  CHECK(fixed_points < 10);  // expected 1 for a uniform permutation
}

}  // namespace
}  // namespace murmur

namespace murmur {

TEST_CASE("A fresh stream seeked to another's position draws what that one draws next") {
  for (int skip = 0; skip < 9; ++skip) {  // every word offset within a block, and a block boundary
    CAPTURE(skip);
    Rng a(11, 4, RngPurpose::kCompression);
    for (int i = 0; i < skip; ++i) a.NextU32();
    a.Normal();  // leaves a spare normal behind
    Rng b(11, 4, RngPurpose::kCompression);
    b.Seek(a.position());
    CHECK(b.position().block == a.position().block);
    for (int i = 0; i < 3; ++i) CHECK(b.Normal() == a.Normal());
    for (int i = 0; i < 10; ++i) CHECK(b.NextU64() == a.NextU64());
  }
  Rng untouched(1, 0, RngPurpose::kGeneric);
  Rng twin(1, 0, RngPurpose::kGeneric);
  twin.Seek(untouched.position());
  CHECK(twin.NextU32() == untouched.NextU32());
}

}  // namespace murmur
