// Selection kernels of the sparsifiers: exact top-k by radix select, the
// DGC-style sampled-threshold approximation, and the |x| >= tau threshold.
//
// All of them order by |x| through the bit pattern of x with the sign cleared:
// for IEEE floats that integer order is the order of |x| (NaN sorts above
// infinity). Each has a fused form that first accumulates the input into an
// error-feedback residual (r += x) in the same pass that reads for selection,
// then selects on r. Output indices are sorted ascending.
//
// Thread-safety: reentrant; the caller owns every buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/rng.h"

namespace murmur::compression {

// Indices of the k largest |a_i|, ties broken towards the lowest index: a
// radix select on the top 11 key bits (one histogram pass and one collecting
// pass over a), then an exact selection among the few candidates. O(n + c log c)
// for c candidates in the threshold bucket; no full sort.
void TopKExact(std::span<const float> a, std::size_t k, std::vector<std::uint32_t>& out);
// The same on r after r += x, done in the histogram pass (error feedback fused
// with selection). REQUIRES: r.size() == x.size().
void TopKExactAccumulate(std::span<float> r, std::span<const float> x, std::size_t k,
                         std::vector<std::uint32_t>& out);

// DGC-style approximate top-k (Lin et al. 2018, Sec. 3 and appendix): estimate
// the threshold from a random sample of 16-element chunks, keep |a_i| >= it;
// when the count leaves [0.8k, 1.3k], fall back to an exact selection among the
// kept ones (too many) or retry with a lower sample quantile (too few) at most
// kApproxRetries times, then exactly. The result always has between 0.8k and
// 1.3k indices (exactly k after a fallback).
inline constexpr int kApproxRetries = 3;
void TopKApprox(std::span<const float> a, std::size_t k, Rng& rng, std::vector<std::uint32_t>& out);
// The same on r after r += x (fused into the first collecting pass).
void TopKApproxAccumulate(std::span<float> r, std::span<const float> x, std::size_t k, Rng& rng,
                          std::vector<std::uint32_t>& out);

// Indices with |a_i| >= tau (tau >= 0), and the fused r += x form.
void ThresholdSelect(std::span<const float> a, float tau, std::vector<std::uint32_t>& out);
void ThresholdSelectAccumulate(std::span<float> r, std::span<const float> x, float tau,
                               std::vector<std::uint32_t>& out);

// The order key of |f|: the bits of f with the sign cleared.
std::uint32_t AbsKey(float f);

}  // namespace murmur::compression
