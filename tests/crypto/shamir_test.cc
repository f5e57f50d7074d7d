// Shamir sharing over GF(2^61 - 1): field arithmetic against 128-bit integer
// arithmetic done another way; random polynomials of degree t - 1 are
// recovered at 0 from any t points and not from t - 1; 32-byte secrets come
// back from any t shares, never from fewer.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <vector>

#include "core/rng.h"
#include "crypto/shamir.h"

namespace murmur::crypto {
namespace {

__extension__ typedef unsigned __int128 Uint128;

FieldElement RandomElement(Rng& rng) { return rng.UniformInt(kShamirPrime); }

std::vector<std::size_t> RandomSubset(Rng& rng, std::size_t n, std::size_t k) {
  std::vector<std::size_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  rng.Shuffle(std::span<std::size_t>(idx));
  idx.resize(k);
  return idx;
}

TEST_CASE("Field arithmetic agrees with 128-bit remainders, inverses invert") {
  Rng rng(5);
  for (int i = 0; i < 2000; ++i) {
    const FieldElement a = RandomElement(rng), b = RandomElement(rng);
    CAPTURE(a);
    CAPTURE(b);
    const Uint128 p = kShamirPrime;
    REQUIRE(FieldMul(a, b) == static_cast<FieldElement>((static_cast<Uint128>(a) * b) % p));
    REQUIRE(FieldAdd(a, b) == static_cast<FieldElement>((static_cast<Uint128>(a) + b) % p));
    REQUIRE(FieldSub(a, b) == static_cast<FieldElement>((static_cast<Uint128>(a) + p - b) % p));
    if (a != 0) REQUIRE(FieldMul(a, FieldInv(a)) == 1);
  }
  CHECK(FieldMul(kShamirPrime - 1, kShamirPrime - 1) == 1);  // (-1)^2
}

TEST_CASE("A random polynomial of degree t-1 is recovered at 0 from any t points, not from t-1") {
  Rng rng(11);
  for (std::size_t t : {1u, 2u, 3u, 7u, 16u}) {
    for (int trial = 0; trial < 20; ++trial) {
      CAPTURE(t);
      CAPTURE(trial);
      std::vector<FieldElement> f(t);
      for (auto& c : f) c = RandomElement(rng);
      const std::size_t n = t + 5;
      std::vector<FieldElement> xs(n), ys(n);
      for (std::size_t i = 0; i < n; ++i) {
        xs[i] = 1 + rng.UniformInt(kShamirPrime - 1);
        ys[i] = EvaluatePolynomial(f, xs[i]);
      }
      if (std::set<FieldElement>(xs.begin(), xs.end()).size() != n) continue;
      auto pick = RandomSubset(rng, n, t);
      std::vector<FieldElement> px, py;
      for (std::size_t i : pick) {
        px.push_back(xs[i]);
        py.push_back(ys[i]);
      }
      auto at0 = InterpolateAtZero(px, py);
      REQUIRE(at0.ok());
      CHECK(*at0 == f[0]);
      if (t >= 2) {
        px.pop_back();
        py.pop_back();
        auto fewer = InterpolateAtZero(px, py);
        REQUIRE(fewer.ok());
        CHECK(*fewer != f[0]);  // equal with probability 1/p
      }
    }
  }
}

TEST_CASE("InterpolateAtZero refuses repeated or zero x") {
  const std::vector<FieldElement> rep = {3, 3}, zero = {0, 4}, y = {1, 2};
  CHECK_FALSE(InterpolateAtZero(rep, y).ok());
  CHECK_FALSE(InterpolateAtZero(zero, y).ok());
  CHECK_FALSE(InterpolateAtZero(rep, std::vector<FieldElement>{1}).ok());
}

TEST_CASE("A 32-byte secret comes back from any t of n shares, t-1 shares are refused or wrong") {
  Rng rng(21);
  for (std::size_t t : {1u, 2u, 5u, 11u}) {
    for (int trial = 0; trial < 10; ++trial) {
      CAPTURE(t);
      CAPTURE(trial);
      ShamirSecret secret{};
      MaskSeed coins{};
      for (auto& b : secret) b = static_cast<std::uint8_t>(rng.NextU32());
      for (auto& b : coins) b = static_cast<std::uint8_t>(rng.NextU32());
      const std::size_t n = 2 * t + 1;
      std::vector<std::uint32_t> xs(n);
      for (std::size_t i = 0; i < n; ++i) xs[i] = static_cast<std::uint32_t>(100 + 3 * i);
      auto shares = ShamirSplit(secret, t, xs, coins);
      REQUIRE(shares.size() == n);
      auto pick = RandomSubset(rng, n, t);
      std::vector<ShamirShare> some;
      for (std::size_t i : pick) some.push_back(shares[i]);
      auto back = ShamirCombine(some, t);
      REQUIRE(back.ok());
      CHECK(*back == secret);
      if (t >= 2) {
        some.pop_back();
        CHECK(ShamirCombine(some, t).status().code() == StatusCode::kFailedPrecondition);
        // Claiming a lower threshold: t-1 shares interpolate to something else.
        auto wrong = ShamirCombine(some, t - 1);
        CHECK((!wrong.ok() || *wrong != secret));
      }
    }
  }
}

TEST_CASE("Shares of one secret are evaluations of one polynomial per chunk") {
  ShamirSecret secret{};
  secret[31] = 0xff;
  MaskSeed coins{};
  coins[0] = 9;
  const std::vector<std::uint32_t> xs = {1, 2, 3, 4, 5, 6};
  auto shares = ShamirSplit(secret, 3, xs, coins);
  // f(6) from f(1), f(2), f(3): Lagrange at 6 computed by hand through InterpolateAtZero of
  // the shifted polynomial g(x) = f(x + 6), which passes through (x_i - 6, f(x_i)).
  for (std::size_t c = 0; c < kShamirChunks; ++c) {
    std::vector<FieldElement> gx = {FieldSub(1, 6), FieldSub(2, 6), FieldSub(3, 6)};
    std::vector<FieldElement> gy = {shares[0].y[c], shares[1].y[c], shares[2].y[c]};
    auto f6 = InterpolateAtZero(gx, gy);
    REQUIRE(f6.ok());
    CHECK(*f6 == shares[5].y[c]);
  }
  // A corrupted share makes the reconstruction fail or differ, never abort.
  std::vector<ShamirShare> bad = {shares[0], shares[1], shares[2]};
  bad[1].y[4] = FieldAdd(bad[1].y[4], 1);
  auto r = ShamirCombine(bad, 3);
  CHECK((!r.ok() || *r != secret));
  bad[1].y[4] = kShamirPrime;  // not a field element
  CHECK_FALSE(ShamirCombine(bad, 3).ok());
}

}  // namespace
}  // namespace murmur::crypto
