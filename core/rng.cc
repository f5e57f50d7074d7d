#include "core/rng.h"

#include <numbers>

#include "core/check.h"

namespace murmur {

namespace {
constexpr std::uint32_t kPhiloxM0 = 0xD2511F53;
constexpr std::uint32_t kPhiloxM1 = 0xCD9E8D57;
constexpr std::uint32_t kPhiloxW0 = 0x9E3779B9;
constexpr std::uint32_t kPhiloxW1 = 0xBB67AE85;

__extension__ typedef unsigned __int128 U128;  // GCC and Clang both provide it

inline void MulHiLo(std::uint32_t a, std::uint32_t b, std::uint32_t* hi, std::uint32_t* lo) {
  std::uint64_t p = static_cast<std::uint64_t>(a) * b;
  *hi = static_cast<std::uint32_t>(p >> 32);
  *lo = static_cast<std::uint32_t>(p);
}
}  // namespace

std::array<std::uint32_t, 4> Philox4x32_10(std::array<std::uint32_t, 4> ctr,
                                           std::array<std::uint32_t, 2> key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kPhiloxW0;
      key[1] += kPhiloxW1;
    }
    std::uint32_t hi0, lo0, hi1, lo1;
    MulHiLo(kPhiloxM0, ctr[0], &hi0, &lo0);
    MulHiLo(kPhiloxM1, ctr[2], &hi1, &lo1);
    ctr = {hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
  }
  return ctr;
}

std::uint64_t Mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

namespace {
std::array<std::uint32_t, 2> KeyFromSeed(std::uint64_t seed) {
  std::uint64_t k = Mix64(seed);
  return {static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(k >> 32)};
}
}  // namespace

// The key comes from the seed alone; (node, purpose) select the stream through
// the high counter words. Philox is a bijection of the counter for a fixed
// key, so streams with different (node, purpose) never share a block.
Rng::Rng(std::uint64_t seed, std::uint64_t node, std::uint32_t purpose)
    : key_(KeyFromSeed(seed)), stream_((node << 20) ^ (static_cast<std::uint64_t>(purpose) & 0xFFFFF)) {
  MURMUR_CHECK_MSG(node < (std::uint64_t{1} << 44), "node id must fit in 44 bits");
}

Rng::Rng(std::uint64_t seed, std::uint64_t node, RngPurpose purpose)
    : Rng(seed, node, static_cast<std::uint32_t>(purpose)) {}

Rng::Rng(std::array<std::uint32_t, 2> key, std::uint64_t stream_hi, std::uint64_t stream_lo)
    : key_(key), stream_(stream_hi ^ stream_lo) {}

Rng Rng::Fork(std::uint64_t sub) const {
  // A fork has a new key derived from this key, the stream and `sub`.
  std::uint64_t k = (static_cast<std::uint64_t>(key_[1]) << 32) | key_[0];
  std::uint64_t nk = Mix64(k ^ Mix64(stream_ ^ Mix64(sub + 0x5851F42D4C957F2DULL)));
  return Rng({static_cast<std::uint32_t>(nk), static_cast<std::uint32_t>(nk >> 32)}, stream_, 0);
}

void Rng::Refill() {
  buffer_ = Philox4x32_10({static_cast<std::uint32_t>(block_), static_cast<std::uint32_t>(block_ >> 32),
                           static_cast<std::uint32_t>(stream_), static_cast<std::uint32_t>(stream_ >> 32)},
                          key_);
  ++block_;
  used_ = 0;
}

void Rng::Seek(const Position& p) {
  MURMUR_CHECK(p.used >= 0 && p.used <= 4 && (p.used == 4 || p.block > 0));
  if (p.used < 4) {
    block_ = p.block - 1;
    Refill();  // regenerates the partly used block; block_ is p.block again
  } else {
    block_ = p.block;
  }
  used_ = p.used;
  has_spare_normal_ = p.has_spare_normal;
  spare_normal_ = p.spare_normal;
}

std::uint32_t Rng::NextU32() {
  if (used_ == 4) Refill();
  return buffer_[used_++];
}

std::uint64_t Rng::NextU64() {
  std::uint64_t hi = NextU32();
  return (hi << 32) | NextU32();
}

float Rng::UniformFloat() { return static_cast<float>(NextU32() >> 8) * (1.0f / 16777216.0f); }

double Rng::Uniform() { return static_cast<double>(NextU64() >> 11) * (1.0 / 9007199254740992.0); }

std::uint64_t Rng::UniformInt(std::uint64_t n) {
  MURMUR_CHECK(n > 0);
  // Lemire's nearly-divisionless method on 64-bit draws.
  U128 m = static_cast<U128>(NextU64()) * n;
  std::uint64_t low = static_cast<std::uint64_t>(m);
  if (low < n) {
    std::uint64_t threshold = (0 - n) % n;
    while (low < threshold) {
      m = static_cast<U128>(NextU64()) * n;
      low = static_cast<std::uint64_t>(m);
    }
  }
  return static_cast<std::uint64_t>(m >> 64);
}

double Rng::Normal() {
  if (has_spare_normal_) {
    has_spare_normal_ = false;
    return spare_normal_;
  }
  double u1 = 1.0 - Uniform();  // (0, 1]
  double u2 = Uniform();
  double r = std::sqrt(-2.0 * std::log(u1));
  double theta = 2.0 * std::numbers::pi * u2;
  spare_normal_ = r * std::sin(theta);
  has_spare_normal_ = true;
  return r * std::cos(theta);
}

double Rng::Gamma(double shape) {
  MURMUR_CHECK(shape > 0);
  if (shape < 1.0) {
    // Boost: Gamma(a) = Gamma(a + 1) * U^(1/a).
    double u = 1.0 - Uniform();
    return Gamma(shape + 1.0) * std::pow(u, 1.0 / shape);
  }
  double d = shape - 1.0 / 3.0;
  double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = Normal();
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    double u = 1.0 - Uniform();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

double Rng::Exponential(double rate) {
  MURMUR_CHECK(rate > 0);
  return -std::log(1.0 - Uniform()) / rate;
}

}  // namespace murmur
