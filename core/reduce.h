// Sums over float vectors whose order is part of their definition, so that
// they give the same bits at every vector width (scalar, SSE, AVX2,
// AVX-512, NEON), on every CPU and build: a plain loop's order would be
// kept by the compiler but is slow, and a library's (Eigen's redux) changes
// with the build's vector width.
//
// The order: 16 partial sums, lane l taking the elements i with
// i mod 16 == l in increasing i, then lane l += lane l + 8, l += l + 4,
// l += l + 2, l += l + 1, and lane 0 is the result. The compiler vectorizes
// the lanes as it likes (16 lanes are one AVX-512 vector, two AVX2 vectors
// or four SSE/NEON ones) without changing any of those additions.
// Products enter the lanes by fused multiply-adds (Dot, SquaredNorm,
// SquaredDistance), each rounded once.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>

namespace murmur {

// sum_i x_i.
float FixedSum(std::span<const float> x);
// sum_i a_i b_i. REQUIRES: a.size() == b.size().
float FixedDot(std::span<const float> a, std::span<const float> b);
// sum_i x_i^2.
float FixedSquaredNorm(std::span<const float> x);
// sum_i (a_i - b_i)^2. REQUIRES: a.size() == b.size().
float FixedSquaredDistance(std::span<const float> a, std::span<const float> b);
// out_i += w v_i (the product rounded, then added: compression::Update::
// AddTo's arithmetic) and, in the same pass, FixedSquaredNorm(v), bit for
// bit. REQUIRES: out.size() == v.size(), and they do not overlap.
float FixedAxpySquaredNorm(std::span<float> out, std::span<const float> v, float w);
// FixedSquaredNorm(a), bit for bit, and in the same pass out_i = a_i + w v_i
// (the product rounded, then added). REQUIRES: equal sizes; out overlaps
// neither a nor v.
float FixedSquaredNormPlusScaled(std::span<const float> a, std::span<const float> v, float w,
                                 std::span<float> out);
// FixedSquaredNorm, taken again in double (each square added in order) when
// the float sum overflows (values near 1.8e19 and up): infinite only when a
// value is.
double SquaredNormOrDouble(std::span<const float> x);
// sum_i x_i^2 of doubles, in the same lane order; each product is rounded
// and then added (no fused multiply-add).
double FixedSquaredNorm(std::span<const double> x);

// out[j] = sum over r of x[r * ld + j] for j < cols, each column summed
// from +0 in increasing r (vectorized across j, which changes no sum).
void ColumnSums(const float* x, std::int64_t rows, std::int64_t cols, std::int64_t ld, float* out);

// x^n for an integer n >= 0 by repeated squaring: the same double on every
// machine (std::pow's last bit is the C library's choice).
double IntPow(double x, long long n);

}  // namespace murmur
