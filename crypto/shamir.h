// Shamir secret sharing (Shamir, CACM 1979) of 32-byte secrets over the prime
// field GF(p), p = 2^61 - 1 (a Mersenne prime: reduction is a shift and an add).
//
// A secret is cut into five chunks of at most 7 bytes (56 bits < 61, so every
// chunk is a field element); each chunk is the constant term of its own random
// polynomial f_c of degree t - 1, and the share at x is (x, f_1(x) .. f_5(x)).
// Any t shares give f_c(0) by Lagrange interpolation; t - 1 shares say nothing
// about it (every value of f_c(0) fits them equally well). Secure aggregation
// (Bonawitz et al. 2017, section 4) shares each client's mask seed b_u and key
// s_u^SK this way, with x = node id + 1.
//
// The polynomials' coefficients come from a ChaCha20 stream keyed by `coins`,
// which must be as secret as the secret itself.
//
// Thread-safety: pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "crypto/mask_stream.h"

namespace murmur::crypto {

using FieldElement = std::uint64_t;
inline constexpr FieldElement kShamirPrime = (FieldElement{1} << 61) - 1;
inline constexpr std::size_t kShamirSecretSize = 32;
inline constexpr std::size_t kShamirChunkBytes = 7;
inline constexpr std::size_t kShamirChunks = 5;  // ceil(32 / 7)
using ShamirSecret = std::array<std::uint8_t, kShamirSecretSize>;

struct ShamirShare {
  std::uint32_t x = 0;  // the evaluation point, never 0
  std::array<FieldElement, kShamirChunks> y{};
};

// Field arithmetic. REQUIRES: operands < kShamirPrime; FieldInv(0) is a bug.
FieldElement FieldAdd(FieldElement a, FieldElement b);
FieldElement FieldSub(FieldElement a, FieldElement b);
FieldElement FieldMul(FieldElement a, FieldElement b);
FieldElement FieldInv(FieldElement a);

// f(x) = sum_k coeffs[k] x^k (Horner).
FieldElement EvaluatePolynomial(std::span<const FieldElement> coeffs, FieldElement x);
// f(0) of the polynomial of degree < xs.size() through the points (xs[i], ys[i]).
// InvalidArgument when the xs are not distinct and nonzero, or the sizes differ.
Result<FieldElement> InterpolateAtZero(std::span<const FieldElement> xs, std::span<const FieldElement> ys);

// Shares of `secret` at each x in `xs` with threshold t. REQUIRES: 1 <= t <= xs.size(),
// the xs distinct and nonzero. O(|xs| t).
std::vector<ShamirShare> ShamirSplit(const ShamirSecret& secret, std::size_t threshold,
                                     std::span<const std::uint32_t> xs, const MaskSeed& coins);

// The secret from the first `threshold` of `shares`. A Status (never an abort)
// when there are fewer than t shares, their x repeat or are 0, a value is not a
// field element, or the result is not a valid chunking (shares from different secrets).
Result<ShamirSecret> ShamirCombine(std::span<const ShamirShare> shares, std::size_t threshold);

}  // namespace murmur::crypto
