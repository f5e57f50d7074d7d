#include "topology/spectral.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include <Spectra/GenEigsSolver.h>
#include <Spectra/SymEigsSolver.h>
#include <Eigen/Eigenvalues>

namespace murmur::topology {
namespace {

void SubtractMean(Eigen::Index n, double* y) {
  double mean = 0;
  for (Eigen::Index i = 0; i < n; ++i) mean += y[i];
  mean /= static_cast<double>(n);
  for (Eigen::Index i = 0; i < n; ++i) y[i] -= mean;
}

// x -> (W - 11^T/n) x. Since W 1 = 1 or 1^T W = 1^T, this has the spectrum
// of W with one eigenvalue 1 replaced by 0.
class DeflatedOp {
 public:
  using Scalar = double;
  explicit DeflatedOp(const MixingMatrix& w) : w_(w) {}
  Eigen::Index rows() const { return w_.size(); }
  Eigen::Index cols() const { return w_.size(); }
  void perform_op(const double* x, double* y) const {
    const auto n = static_cast<std::size_t>(rows());
    double mean = 0;
    for (std::size_t i = 0; i < n; ++i) mean += x[i];
    mean /= static_cast<double>(n);
    w_.Apply(std::span<const double>(x, n), std::span<double>(y, n));
    for (std::size_t i = 0; i < n; ++i) y[i] -= mean;
  }

 private:
  const MixingMatrix& w_;
};

// x -> C^T C x with C = (I - J) P (I - J), P = W_{r-1} ... W_0.
class ProductNormalOp {
 public:
  using Scalar = double;
  ProductNormalOp(std::span<const MixingMatrix> rounds, std::span<const MixingMatrix> transposed)
      : rounds_(rounds), transposed_(transposed), tmp_(rounds.front().size()) {}
  Eigen::Index rows() const { return rounds_.front().size(); }
  Eigen::Index cols() const { return rows(); }
  void perform_op(const double* x, double* y) const {
    const auto n = static_cast<std::size_t>(rows());
    std::copy(x, x + n, y);
    SubtractMean(rows(), y);
    for (const MixingMatrix& w : rounds_) Step(w, y, n);
    SubtractMean(rows(), y);
    for (auto it = transposed_.rbegin(); it != transposed_.rend(); ++it) Step(*it, y, n);
    SubtractMean(rows(), y);
  }

 private:
  void Step(const MixingMatrix& w, double* y, std::size_t n) const {
    w.Apply(std::span<const double>(y, n), std::span<double>(tmp_.data(), n));
    std::copy(tmp_.begin(), tmp_.end(), y);
  }
  std::span<const MixingMatrix> rounds_;
  std::span<const MixingMatrix> transposed_;
  mutable std::vector<double> tmp_;
};

Eigen::Index KrylovSize(Eigen::Index n) { return std::min<Eigen::Index>(n - 1, 24); }

// Fallback when Lanczos/Arnoldi breaks down (e.g. on an operator that is
// exactly zero, like the product of a full one-peer exponential period) or
// does not converge: power iteration, whose |A x| / |x| increases towards the
// spectral radius of a symmetric A and estimates it for a non-symmetric one.
template <typename Op>
SpectralInfo PowerIteration(const Op& op, const SpectralOptions& options, std::string method) {
  const auto n = static_cast<std::size_t>(op.rows());
  std::vector<double> x(n), y(n);
  // A fixed, deterministic start with a component along every eigenvector in general.
  for (std::size_t i = 0; i < n; ++i) x[i] = std::sin(1.0 + 0.7 * static_cast<double>(i) * (i % 7 + 1));
  double norm = std::sqrt(std::inner_product(x.begin(), x.end(), x.begin(), 0.0));
  double estimate = 0, previous = -1;
  for (int it = 0; it < options.max_iterations; ++it) {
    for (double& v : x) v /= norm;
    op.perform_op(x.data(), y.data());
    norm = std::sqrt(std::inner_product(y.begin(), y.end(), y.begin(), 0.0));
    estimate = norm;
    if (norm < 1e-300) return {0.0, true, method};
    if (std::abs(estimate - previous) <= options.tolerance * estimate) return {estimate, true, method};
    previous = estimate;
    x.swap(y);
  }
  return {estimate, false, method};
}

// Runs a Spectra solver for the one eigenvalue of largest magnitude (or
// largest value); on failure, power iteration.
template <typename Solver, typename Op>
SpectralInfo Krylov(Op& op, Spectra::SortRule rule, const SpectralOptions& options, const std::string& method,
                    bool square_root) {
  try {
    Solver eigs(op, 1, KrylovSize(op.rows()));
    eigs.init();
    eigs.compute(rule, options.max_iterations, options.tolerance);
    if (eigs.info() == Spectra::CompInfo::Successful) {
      double v = std::abs(eigs.eigenvalues()(0));
      return {square_root ? std::sqrt(v) : v, true, method};
    }
  } catch (const std::exception&) {
    // Spectra throws on a Krylov breakdown; the power iteration below handles those operators.
  }
  SpectralInfo info = PowerIteration(op, options, "power iteration (" + method + " failed)");
  if (square_root) info.rho = std::sqrt(info.rho);
  return info;
}

}  // namespace

SpectralInfo SecondLargestEigenvalue(const MixingMatrix& w, const SpectralOptions& options) {
  const NodeId n = w.size();
  if (n <= 1) return {0.0, true, "trivial"};
  const bool symmetric = w.IsSymmetric(1e-12);
  if (n <= (symmetric ? options.dense_limit : options.dense_nonsymmetric_limit) || n < 4) {
    Eigen::MatrixXd a = w.ToDense();
    a.array() -= 1.0 / n;
    double rho = 0;
    if (symmetric) {
      Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(a, Eigen::EigenvaluesOnly);
      rho = es.eigenvalues().cwiseAbs().maxCoeff();
      return {rho, true, "dense symmetric (Eigen)"};
    }
    Eigen::EigenSolver<Eigen::MatrixXd> es(a, false);
    rho = es.eigenvalues().cwiseAbs().maxCoeff();
    return {rho, true, "dense non-symmetric (Eigen)"};
  }
  DeflatedOp op(w);
  if (symmetric)
    return Krylov<Spectra::SymEigsSolver<DeflatedOp>>(op, Spectra::SortRule::LargestMagn, options,
                                                      "Lanczos (Spectra)", false);
  return Krylov<Spectra::GenEigsSolver<DeflatedOp>>(op, Spectra::SortRule::LargestMagn, options,
                                                    "Arnoldi (Spectra)", false);
}

SpectralInfo ProductContraction(std::span<const MixingMatrix> rounds, const SpectralOptions& options) {
  MURMUR_CHECK(!rounds.empty());
  const NodeId n = rounds.front().size();
  for (const MixingMatrix& w : rounds) MURMUR_CHECK(w.size() == n);
  if (n <= 1) return {0.0, true, "trivial"};
  if (n <= options.dense_nonsymmetric_limit || n < 4) {
    // P = W_{r-1} ... W_0, then C = (I - J) P (I - J): center columns and rows.
    Eigen::MatrixXd p = Eigen::MatrixXd::Identity(n, n);
    for (const MixingMatrix& w : rounds) p = w.ToDense() * p;
    Eigen::RowVectorXd col_mean = p.colwise().mean();
    p.rowwise() -= col_mean;
    Eigen::VectorXd row_mean = p.rowwise().mean();
    p.colwise() -= row_mean;
    Eigen::JacobiSVD<Eigen::MatrixXd> svd(p);
    return {svd.singularValues()(0), true, "dense SVD (Eigen)"};
  }
  std::vector<MixingMatrix> transposed;
  transposed.reserve(rounds.size());
  for (const MixingMatrix& w : rounds) transposed.push_back(w.Transposed());
  ProductNormalOp op(rounds, transposed);
  return Krylov<Spectra::SymEigsSolver<ProductNormalOp>>(op, Spectra::SortRule::LargestAlge, options,
                                                         "Lanczos on C^T C (Spectra)", true);
}

}  // namespace murmur::topology
