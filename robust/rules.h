// Robust statistics of a set of vectors: the pure rule functions that both
// federated aggregation (federated/aggregation.h, over client updates) and robust
// gossip mixing (gossip/robust_mixing.h, over a node's neighbourhood) apply.
//
//   Mean              weighted average (not robust)
//   CoordinateMedian  per coordinate, the median (Yin et al., ICML 2018)
//   TrimmedMean       per coordinate, drop the `cut` largest and smallest values
//                     and average the rest (Yin et al. 2018)
//   KrumScores        sum of squared distances to the K - f - 2 nearest others
//                     (Blanchard et al., NeurIPS 2017)
//   CenteredClipping  v <- v + (1/K) sum_i CLIP(x_i - v, tau), L iterations
//                     (Karimireddy, He and Jaggi, ICML 2021, Eq. 2)
//   ClipScale         min(1, tau / norm), the factor of CLIP(z, tau) = z min(1, tau / ||z||)
//
// Inputs are float vectors, sums are taken in double. Callers check sizes and
// counts; these functions only state their REQUIRES.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace murmur::robust {

using Vectors = std::span<const std::span<const float>>;

// ||a - b||^2. REQUIRES: a.size() == b.size().
double SquaredDistance(std::span<const float> a, std::span<const float> b);

// min(1, tau / norm); 1 when norm is 0. REQUIRES: tau >= 0.
double ClipScale(double norm, double tau);

// out = sum_i w_i u_i / sum_i w_i (uniform when `weights` is empty).
// REQUIRES: u non-empty, every u_i and out of one size, weights empty or one per u_i with a positive sum.
void Mean(Vectors u, std::span<const double> weights, std::span<double> out);

// REQUIRES: u non-empty, every u_i and out of one size.
void CoordinateMedian(Vectors u, std::span<double> out);

// REQUIRES: as CoordinateMedian, and 2 cut < u.size().
void TrimmedMean(Vectors u, std::size_t cut, std::span<double> out);

// Krum score of every u_i. REQUIRES: every u_i of one size.
std::vector<double> KrumScores(Vectors u, std::size_t f);

// `center` is the starting point (zero when empty). REQUIRES: as Mean; center empty or of out's size.
void CenteredClipping(Vectors u, double tau, int iters, std::span<const double> center,
                      std::span<double> out);

}  // namespace murmur::robust
