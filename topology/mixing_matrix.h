// MixingMatrix: the sparse gossip matrix W of one round.
//
// Row i lists the (j, W_ij) entries with W_ij != 0, self weight included,
// sorted by j: node i's new value is sum_j W_ij x_j, so W_ij != 0 means that
// information flows from j to i. D-PSGD and gradient tracking use
// row-stochastic (usually symmetric, doubly stochastic) W; push-sum uses a
// column-stochastic P (Kempe et al. 2003; Nedic & Olshevsky 2015). Matrices
// come from the weight rules in topology/weights.h or from FromEntries.
// Storage is CSR: n + 1 offsets and one (column, weight) pair per entry.
//
// Thread-safety: immutable after construction; Apply* may run concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <Eigen/Core>

#include "core/env.h"
#include "core/param_vector.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "topology/graph.h"

namespace murmur::topology {

struct MixingEntry {
  NodeId col = 0;
  double weight = 0;
};

struct Triplet {
  NodeId row = 0;
  NodeId col = 0;
  double weight = 0;
};

// Which sums must be 1: rows (averaging, D-PSGD), columns (push-sum), or both.
enum class Stochasticity { kRow, kColumn, kDoubly };

// Default tolerance on row and column sums.
inline constexpr double kStochasticTolerance = 1e-6;

class MixingMatrix {
 public:
  // The 0 x 0 matrix.
  MixingMatrix() = default;

  // The n x n identity (every node keeps its own value).
  static MixingMatrix Identity(NodeId n);

  // Builds a matrix from explicit entries (any order). Returns InvalidArgument
  // for an index >= n, a repeated (row, col) or a non-finite weight. Zero
  // weights are dropped. Stochasticity is checked by Validate, not here.
  static Result<MixingMatrix> FromEntries(NodeId n, std::span<const Triplet> entries);

  // From CSR arrays whose rows are sorted by column without repeats.
  // REQUIRES: offsets.size() == n + 1, offsets.back() == entries.size().
  static MixingMatrix FromRows(NodeId n, std::vector<std::size_t> offsets, std::vector<MixingEntry> entries);

  NodeId size() const { return n_; }
  std::size_t num_entries() const { return entries_.size(); }

  // Row i's entries sorted by column. REQUIRES: i < size().
  std::span<const MixingEntry> Row(NodeId i) const {
    return {entries_.data() + offsets_[i], entries_.data() + offsets_[i + 1]};
  }
  // W_ij (0 when absent); binary search in row i.
  double At(NodeId i, NodeId j) const;

  // y = W x. REQUIRES: x.size() == y.size() == size(), x and y do not overlap.
  void Apply(std::span<const double> x, std::span<double> y) const;
  void Apply(std::span<const float> x, std::span<float> y) const;

  // Y = W X for a dense n x d matrix whose row i is node i's vector (the
  // simulator stacks the nodes' ParamVectors this way). Each output row is
  // computed by one task in a fixed order, so the result is bit-identical for
  // any thread count. `pool` may be null (runs on the caller).
  // REQUIRES: X.rows() == Y.rows() == size(), X.cols() == Y.cols(), X and Y distinct.
  void ApplyRows(const Eigen::Ref<const RowMatrixXf>& x, Eigen::Ref<RowMatrixXf> y,
                 ThreadPool* pool = nullptr) const;
  // out[i] = sum_j W_ij in[j] on whole ParamVectors, with the same determinism.
  // REQUIRES: in.size() == out.size() == size(), equal vector sizes, in and out distinct.
  void ApplyParams(std::span<const ParamVector> in, std::span<ParamVector> out,
                   ThreadPool* pool = nullptr) const;

  // OK when every weight is >= 0, every off-diagonal W_ij has an arc j -> i
  // in `support` (if given; information flows from j to i), and rows and/or
  // columns sum to 1 within `tol`. Otherwise InvalidArgument naming the first
  // offending row or column: "row 17 sums to 0.93, not 1 within 1e-06".
  Status Validate(Stochasticity kind, const Graph* support = nullptr,
                  double tol = kStochasticTolerance) const;

  // Whether |W_ij - W_ji| <= tol for all i, j.
  bool IsSymmetric(double tol = 1e-12) const;
  MixingMatrix Transposed() const;

  // The dense n x n matrix. REQUIRES: size() <= kMaxDenseNodes.
  static constexpr NodeId kMaxDenseNodes = 20000;
  Eigen::MatrixXd ToDense() const;

  // The communication graph: arc j -> i for every off-diagonal W_ij != 0.
  Graph SupportGraph() const;

 private:
  NodeId n_ = 0;
  std::vector<std::size_t> offsets_{0};
  std::vector<MixingEntry> entries_;
};

// The matrix for a round in which only the nodes with alive[i] != 0 take part.
// Dead nodes are isolated (self weight 1). For kRow (or kDoubly), a live
// node's weight on a dead neighbour moves to its own self weight, which keeps
// rows stochastic and symmetric matrices symmetric (hence doubly stochastic).
// For kColumn (push-sum), the mass a live node would push to a dead one stays
// with it instead, which keeps columns stochastic.
// REQUIRES: alive.size() == w.size().
MixingMatrix RemoveOffline(const MixingMatrix& w, std::span<const std::uint8_t> alive,
                           Stochasticity kind = Stochasticity::kRow);

}  // namespace murmur::topology
