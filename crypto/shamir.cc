#include "crypto/shamir.h"

#include <sodium.h>

#include <algorithm>
#include <string>

#include "core/check.h"

namespace murmur::crypto {

namespace {

__extension__ typedef unsigned __int128 Uint128;  // GCC and Clang; __extension__ keeps -pedantic quiet

FieldElement Reduce(Uint128 v) {
  // 2^61 = 1 (mod p): fold the high bits onto the low ones.
  FieldElement r = static_cast<FieldElement>(v & kShamirPrime) + static_cast<FieldElement>(v >> 61);
  r = (r & kShamirPrime) + (r >> 61);
  return r >= kShamirPrime ? r - kShamirPrime : r;
}

std::size_t ChunkBytes(std::size_t c) {
  return std::min(kShamirChunkBytes, kShamirSecretSize - c * kShamirChunkBytes);
}

// Uniform field elements from the ChaCha20 stream of `coins` (rejection sampling of 61-bit words).
class CoinStream {
 public:
  explicit CoinStream(const MaskSeed& coins) : coins_(coins) {}
  ~CoinStream() { sodium_memzero(buffer_.data(), buffer_.size() * sizeof(std::uint32_t)); }
  FieldElement Next() {
    for (;;) {
      if (used_ + 2 > buffer_.size()) {
        ChaCha20Words(coins_, kCoinNonce, word_, buffer_);
        word_ += buffer_.size();
        used_ = 0;
      }
      const FieldElement v =
          (FieldElement{buffer_[used_]} | (FieldElement{buffer_[used_ + 1]} << 32)) & kShamirPrime;
      used_ += 2;
      if (v < kShamirPrime) return v;
    }
  }

 private:
  static constexpr ChaChaNonce kCoinNonce = {'s', 'h', 'a', 'm', 'i', 'r', 0, 0, 0, 0, 0, 0};
  const MaskSeed& coins_;
  std::array<std::uint32_t, 64> buffer_{};
  std::size_t used_ = 64;
  std::uint64_t word_ = 0;
};

}  // namespace

FieldElement FieldAdd(FieldElement a, FieldElement b) {
  const FieldElement s = a + b;
  return s >= kShamirPrime ? s - kShamirPrime : s;
}

FieldElement FieldSub(FieldElement a, FieldElement b) { return a >= b ? a - b : a + kShamirPrime - b; }

FieldElement FieldMul(FieldElement a, FieldElement b) { return Reduce(static_cast<Uint128>(a) * b); }

FieldElement FieldInv(FieldElement a) {
  MURMUR_CHECK(a != 0 && a < kShamirPrime);
  // Fermat: a^(p-2).
  FieldElement result = 1, base = a, e = kShamirPrime - 2;
  while (e > 0) {
    if (e & 1) result = FieldMul(result, base);
    base = FieldMul(base, base);
    e >>= 1;
  }
  return result;
}

FieldElement EvaluatePolynomial(std::span<const FieldElement> coeffs, FieldElement x) {
  FieldElement r = 0;
  for (std::size_t k = coeffs.size(); k-- > 0;) r = FieldAdd(FieldMul(r, x), coeffs[k]);
  return r;
}

Result<FieldElement> InterpolateAtZero(std::span<const FieldElement> xs, std::span<const FieldElement> ys) {
  if (xs.size() != ys.size() || xs.empty())
    return Status::InvalidArgument("interpolation: need matching, non-empty points");
  FieldElement sum = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (xs[i] == 0 || xs[i] >= kShamirPrime || ys[i] >= kShamirPrime) {
      return Status::InvalidArgument("interpolation: point " + std::to_string(i) +
                                     " is not a nonzero field element");
    }
    // Lagrange basis at 0: prod_{j != i} x_j / (x_j - x_i).
    FieldElement num = 1, den = 1;
    for (std::size_t j = 0; j < xs.size(); ++j) {
      if (j == i) continue;
      if (xs[j] == xs[i])
        return Status::InvalidArgument("interpolation: x = " + std::to_string(xs[i]) + " repeats");
      num = FieldMul(num, xs[j]);
      den = FieldMul(den, FieldSub(xs[j], xs[i]));
    }
    sum = FieldAdd(sum, FieldMul(ys[i], FieldMul(num, FieldInv(den))));
  }
  return sum;
}

std::vector<ShamirShare> ShamirSplit(const ShamirSecret& secret, std::size_t threshold,
                                     std::span<const std::uint32_t> xs, const MaskSeed& coins) {
  MURMUR_CHECK(threshold >= 1 && threshold <= xs.size());
  std::vector<ShamirShare> shares(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    MURMUR_CHECK(xs[i] != 0);
    shares[i].x = xs[i];
  }
  CoinStream coin(coins);
  std::vector<FieldElement> f(threshold);
  for (std::size_t c = 0; c < kShamirChunks; ++c) {
    FieldElement chunk = 0;
    for (std::size_t b = 0; b < ChunkBytes(c); ++b)
      chunk |= FieldElement{secret[c * kShamirChunkBytes + b]} << (8 * b);
    f[0] = chunk;
    for (std::size_t k = 1; k < threshold; ++k) f[k] = coin.Next();
    for (auto& s : shares) s.y[c] = EvaluatePolynomial(f, s.x);
  }
  sodium_memzero(f.data(), f.size() * sizeof(FieldElement));
  return shares;
}

Result<ShamirSecret> ShamirCombine(std::span<const ShamirShare> shares, std::size_t threshold) {
  if (threshold < 1 || shares.size() < threshold) {
    return Status::FailedPrecondition("secret sharing: " + std::to_string(shares.size()) +
                                      " shares, threshold " + std::to_string(threshold));
  }
  std::vector<FieldElement> xs(threshold), ys(threshold);
  for (std::size_t i = 0; i < threshold; ++i) xs[i] = shares[i].x;
  ShamirSecret secret{};
  for (std::size_t c = 0; c < kShamirChunks; ++c) {
    for (std::size_t i = 0; i < threshold; ++i) ys[i] = shares[i].y[c];
    MURMUR_ASSIGN_OR_RETURN(FieldElement chunk, InterpolateAtZero(xs, ys));
    if ((chunk >> (8 * ChunkBytes(c))) != 0) {
      return Status::DataLoss("secret sharing: chunk " + std::to_string(c) +
                              " out of range; the shares are not of one secret");
    }
    for (std::size_t b = 0; b < ChunkBytes(c); ++b) {
      secret[c * kShamirChunkBytes + b] = static_cast<std::uint8_t>(chunk >> (8 * b));
    }
  }
  return secret;
}

}  // namespace murmur::crypto
