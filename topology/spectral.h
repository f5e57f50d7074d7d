// Spectral analysis of mixing matrices: how fast gossip averages.
//
// For a stochastic W with W 1 = 1 (or 1^T W = 1^T), the disagreement
// x - mean(x) 1 shrinks per round by rho, the second-largest eigenvalue
// magnitude, which is the spectral radius of W - 11^T/n (Xiao & Boyd 2004,
// Theorem 1; Boyd et al. 2004); 1 - rho is the spectral gap that enters every
// decentralized SGD rate (Koloskova et al. 2020, Assumption 4: p = 1 - rho^2).
// Symmetric W up to `dense_limit` nodes: Eigen's SelfAdjointEigenSolver;
// non-symmetric W up to `dense_nonsymmetric_limit`: Eigen's EigenSolver;
// larger W: implicitly restarted Lanczos / Arnoldi (Spectra) on the operator
// x -> W x - mean(x) 1, which never forms a dense matrix, with power
// iteration as the fallback where the Krylov method breaks down.
//
// A time-varying schedule mixes by the product P = W_{r-1} ... W_0 over r
// rounds; its contraction is the largest singular value of P restricted to
// the consensus-orthogonal subspace, sigma_max((I - J) P (I - J)) with
// J = 11^T/n, which for doubly stochastic W is ||P - J||_2 (Ying et al.
// 2021, Sec. 4; Koloskova et al. 2020, Assumption 4 with tau rounds).
//
// Thread-safety: pure functions.
#pragma once

#include <span>
#include <string>

#include "core/status.h"
#include "topology/mixing_matrix.h"

namespace murmur::topology {

struct SpectralOptions {
  NodeId dense_limit = 2000;              // symmetric W: dense solver up to here
  NodeId dense_nonsymmetric_limit = 400;  // non-symmetric W and products: dense up to here
  int max_iterations = 200;               // Lanczos / Arnoldi restarts; power iterations
  double tolerance = 1e-9;                // relative accuracy of the iterative eigenvalue
};

struct SpectralInfo {
  double rho = 0;         // second-largest eigenvalue magnitude, or the contraction
  bool converged = true;  // false: no method converged; rho is the last power-iteration estimate
  std::string method;     // "dense symmetric", "Lanczos (Spectra)", ...
  // 1 - rho; exactly 0 within rounding of it (a disconnected graph's
  // rho = 1 comes out as 1 + 2e-16, which is no gap, not a negative one).
  double gap() const {
    const double g = 1.0 - rho;
    return g > -1e-12 && g < 1e-12 ? 0.0 : g;
  }
};

// rho of W. For n <= 1 rho = 0 (nothing to disagree about).
SpectralInfo SecondLargestEigenvalue(const MixingMatrix& w, const SpectralOptions& options = {});

// Contraction of rounds.back() * ... * rounds.front(), as above.
// REQUIRES: all matrices have the same size; rounds is not empty.
SpectralInfo ProductContraction(std::span<const MixingMatrix> rounds, const SpectralOptions& options = {});

}  // namespace murmur::topology
