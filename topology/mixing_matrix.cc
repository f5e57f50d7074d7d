#include "topology/mixing_matrix.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

namespace murmur::topology {
namespace {

std::string FormatSum(double value) {
  std::ostringstream out;
  out.precision(10);
  out << value;
  return out.str();
}

template <typename T>
void ApplyImpl(NodeId n, const std::vector<std::size_t>& offsets, const std::vector<MixingEntry>& entries,
               std::span<const T> x, std::span<T> y) {
  MURMUR_CHECK(x.size() == n && y.size() == n);
  for (NodeId i = 0; i < n; ++i) {
    double acc = 0;
    for (std::size_t k = offsets[i]; k < offsets[i + 1]; ++k) acc += entries[k].weight * x[entries[k].col];
    y[i] = static_cast<T>(acc);
  }
}

// Rows handed to one task by ApplyRows/ApplyParams; fixed, so results do not
// depend on the thread count.
constexpr std::size_t kRowGrain = 16;

}  // namespace

MixingMatrix MixingMatrix::Identity(NodeId n) {
  std::vector<std::size_t> offsets(static_cast<std::size_t>(n) + 1);
  std::vector<MixingEntry> entries(n);
  for (NodeId i = 0; i < n; ++i) {
    offsets[i + 1] = i + 1;
    entries[i] = {i, 1.0};
  }
  return FromRows(n, std::move(offsets), std::move(entries));
}

MixingMatrix MixingMatrix::FromRows(NodeId n, std::vector<std::size_t> offsets,
                                    std::vector<MixingEntry> entries) {
  MURMUR_CHECK(offsets.size() == static_cast<std::size_t>(n) + 1 && offsets.back() == entries.size());
  MixingMatrix w;
  w.n_ = n;
  w.offsets_ = std::move(offsets);
  w.entries_ = std::move(entries);
  return w;
}

Result<MixingMatrix> MixingMatrix::FromEntries(NodeId n, std::span<const Triplet> entries) {
  std::vector<Triplet> sorted;
  sorted.reserve(entries.size());
  for (const Triplet& t : entries) {
    if (t.row >= n || t.col >= n)
      return Status::InvalidArgument("entry (" + std::to_string(t.row) + ", " + std::to_string(t.col) +
                                     ") out of range for " + std::to_string(n) + " nodes");
    if (!std::isfinite(t.weight))
      return Status::InvalidArgument("entry (" + std::to_string(t.row) + ", " + std::to_string(t.col) +
                                     ") has a non-finite weight");
    if (t.weight != 0) sorted.push_back(t);
  }
  std::sort(sorted.begin(), sorted.end(), [](const Triplet& a, const Triplet& b) {
    return a.row != b.row ? a.row < b.row : a.col < b.col;
  });
  std::vector<std::size_t> offsets(static_cast<std::size_t>(n) + 1, 0);
  std::vector<MixingEntry> out;
  out.reserve(sorted.size());
  for (std::size_t k = 0; k < sorted.size(); ++k) {
    if (k > 0 && sorted[k].row == sorted[k - 1].row && sorted[k].col == sorted[k - 1].col)
      return Status::InvalidArgument("entry (" + std::to_string(sorted[k].row) + ", " +
                                     std::to_string(sorted[k].col) + ") given more than once");
    ++offsets[sorted[k].row + 1];
    out.push_back({sorted[k].col, sorted[k].weight});
  }
  for (std::size_t i = 0; i < n; ++i) offsets[i + 1] += offsets[i];
  return FromRows(n, std::move(offsets), std::move(out));
}

double MixingMatrix::At(NodeId i, NodeId j) const {
  auto row = Row(i);
  auto it =
      std::lower_bound(row.begin(), row.end(), j, [](const MixingEntry& e, NodeId c) { return e.col < c; });
  return it != row.end() && it->col == j ? it->weight : 0.0;
}

void MixingMatrix::Apply(std::span<const double> x, std::span<double> y) const {
  ApplyImpl<double>(n_, offsets_, entries_, x, y);
}

void MixingMatrix::Apply(std::span<const float> x, std::span<float> y) const {
  ApplyImpl<float>(n_, offsets_, entries_, x, y);
}

void MixingMatrix::ApplyRows(const Eigen::Ref<const RowMatrixXf>& x, Eigen::Ref<RowMatrixXf> y,
                             ThreadPool* pool) const {
  MURMUR_CHECK(x.rows() == n_ && y.rows() == n_ && x.cols() == y.cols());
  auto rows = [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      auto out = y.row(static_cast<Eigen::Index>(i));
      out.setZero();
      for (const MixingEntry& e : Row(static_cast<NodeId>(i)))
        out += static_cast<float>(e.weight) * x.row(static_cast<Eigen::Index>(e.col));
    }
  };
  if (pool != nullptr) {
    pool->ParallelFor(n_, kRowGrain, rows);
  } else {
    rows(0, n_);
  }
}

void MixingMatrix::ApplyParams(std::span<const ParamVector> in, std::span<ParamVector> out,
                               ThreadPool* pool) const {
  MURMUR_CHECK(in.size() == n_ && out.size() == n_);
  auto rows = [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      MURMUR_CHECK(out[i].size() == in[i].size());
      auto y = out[i].vec();
      y.setZero();
      for (const MixingEntry& e : Row(static_cast<NodeId>(i))) {
        MURMUR_CHECK(in[e.col].size() == out[i].size());
        y += static_cast<float>(e.weight) * in[e.col].vec();
      }
    }
  };
  if (pool != nullptr) {
    pool->ParallelFor(n_, kRowGrain, rows);
  } else {
    rows(0, n_);
  }
}

Status MixingMatrix::Validate(Stochasticity kind, const Graph* support, double tol) const {
  if (support != nullptr && support->num_nodes() != n_)
    return Status::InvalidArgument("matrix has " + std::to_string(n_) + " rows but the graph has " +
                                   std::to_string(support->num_nodes()) + " nodes");
  std::vector<double> col_sums(n_, 0.0);
  for (NodeId i = 0; i < n_; ++i) {
    double sum = 0;
    for (const MixingEntry& e : Row(i)) {
      if (!(e.weight >= 0))
        return Status::InvalidArgument("W(" + std::to_string(i) + ", " + std::to_string(e.col) +
                                       ") = " + FormatSum(e.weight) + " is negative");
      if (support != nullptr && e.col != i && !support->HasEdge(e.col, i))
        return Status::InvalidArgument("W(" + std::to_string(i) + ", " + std::to_string(e.col) +
                                       ") is not on an edge " + std::to_string(e.col) + " -> " +
                                       std::to_string(i));
      sum += e.weight;
      col_sums[e.col] += e.weight;
    }
    if (kind != Stochasticity::kColumn && !(std::abs(sum - 1.0) <= tol))
      return Status::InvalidArgument("row " + std::to_string(i) + " sums to " + FormatSum(sum) +
                                     ", not 1 within " + FormatSum(tol));
  }
  if (kind != Stochasticity::kRow)
    for (NodeId j = 0; j < n_; ++j)
      if (!(std::abs(col_sums[j] - 1.0) <= tol))
        return Status::InvalidArgument("column " + std::to_string(j) + " sums to " + FormatSum(col_sums[j]) +
                                       ", not 1 within " + FormatSum(tol));
  return Status::Ok();
}

bool MixingMatrix::IsSymmetric(double tol) const {
  for (NodeId i = 0; i < n_; ++i)
    for (const MixingEntry& e : Row(i))
      if (std::abs(e.weight - At(e.col, i)) > tol) return false;
  return true;
}

MixingMatrix MixingMatrix::Transposed() const {
  std::vector<std::size_t> offsets(static_cast<std::size_t>(n_) + 1, 0);
  for (const MixingEntry& e : entries_) ++offsets[e.col + 1];
  for (std::size_t i = 0; i < n_; ++i) offsets[i + 1] += offsets[i];
  std::vector<MixingEntry> out(entries_.size());
  std::vector<std::size_t> next(offsets.begin(), offsets.end() - 1);
  // Rows are visited in increasing order, so each transposed row comes out sorted.
  for (NodeId i = 0; i < n_; ++i)
    for (const MixingEntry& e : Row(i)) out[next[e.col]++] = {i, e.weight};
  return FromRows(n_, std::move(offsets), std::move(out));
}

Eigen::MatrixXd MixingMatrix::ToDense() const {
  MURMUR_CHECK(n_ <= kMaxDenseNodes);
  Eigen::MatrixXd d = Eigen::MatrixXd::Zero(n_, n_);
  for (NodeId i = 0; i < n_; ++i)
    for (const MixingEntry& e : Row(i)) d(i, e.col) = e.weight;
  return d;
}

Graph MixingMatrix::SupportGraph() const {
  std::vector<Edge> arcs;
  arcs.reserve(entries_.size());
  for (NodeId i = 0; i < n_; ++i)
    for (const MixingEntry& e : Row(i))
      if (e.col != i) arcs.push_back({e.col, i});
  Directedness d = IsSymmetric(0.0) ? Directedness::kUndirected : Directedness::kDirected;
  if (d == Directedness::kUndirected) {
    std::erase_if(arcs, [](const Edge& a) { return a.u > a.v; });
  }
  return Graph::FromEdgesDedup(n_, arcs, d);
}

MixingMatrix RemoveOffline(const MixingMatrix& w, std::span<const std::uint8_t> alive, Stochasticity kind) {
  MURMUR_CHECK(alive.size() == w.size());
  if (kind == Stochasticity::kColumn) {
    // Column-wise renormalization is the row-wise one on the transpose.
    return RemoveOffline(w.Transposed(), alive, Stochasticity::kRow).Transposed();
  }
  const NodeId n = w.size();
  std::vector<std::size_t> offsets(static_cast<std::size_t>(n) + 1, 0);
  std::vector<MixingEntry> out;
  out.reserve(w.num_entries());
  for (NodeId i = 0; i < n; ++i) {
    if (!alive[i]) {
      out.push_back({i, 1.0});
    } else {
      double moved = 0;
      for (const MixingEntry& e : w.Row(i))
        if (e.col != i && !alive[e.col]) moved += e.weight;
      bool self_written = false;
      for (const MixingEntry& e : w.Row(i)) {
        if (e.col != i && !alive[e.col]) continue;
        if (e.col > i && !self_written) {
          if (moved != 0) out.push_back({i, moved});
          self_written = true;
        }
        out.push_back({e.col, e.col == i ? e.weight + moved : e.weight});
        if (e.col == i) self_written = true;
      }
      if (!self_written && moved != 0) out.push_back({i, moved});
    }
    offsets[i + 1] = out.size();
  }
  return MixingMatrix::FromRows(n, std::move(offsets), std::move(out));
}

}  // namespace murmur::topology
