#include "gossip/lowrank_reduce.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "compression/powersgd.h"
#include "core/check.h"
#include "core/gemm.h"
#include "core/rng.h"

namespace murmur::gossip {

LowRankReduce::LowRankReduce(const Layout& layout, std::size_t size, std::uint32_t rank, bool error_feedback,
                             std::uint64_t seed)
    : error_feedback_(error_feedback) {
  MURMUR_CHECK(rank >= 1);
  MURMUR_CHECK(layout.num_tensors() == 0 || layout.total_size() == size);
  if (layout.num_tensors() == 0) {
    tensors_.push_back(Tensor{0, size, size, 1, 0, 0, 0});
  } else {
    for (std::size_t t = 0; t < layout.num_tensors(); ++t) {
      const TensorSpec& spec = layout.tensor(t);
      Tensor x;
      x.offset = spec.offset;
      x.size = spec.size;
      x.rows = static_cast<std::size_t>(spec.rows());
      x.cols = static_cast<std::size_t>(spec.cols());
      const std::size_t r = std::min<std::size_t>({rank, x.rows, x.cols});
      if (x.rows >= 2 && x.cols >= 2 && r * (x.rows + x.cols) < x.rows * x.cols) x.rank = r;
      tensors_.push_back(x);
    }
  }
  Rng rng(seed, 0, RngPurpose::kLowRank);
  for (Tensor& t : tensors_) {
    t.first_at = first_size_;
    first_size_ += t.rank > 0 ? t.rows * t.rank : t.size;
    if (t.rank == 0) continue;
    t.q_at = q_.size();
    for (std::size_t k = 0; k < t.cols * t.rank; ++k) q_.push_back(static_cast<float>(rng.Normal()));
  }
  if (error_feedback_) residual_.assign(size, 0.0f);
  m_.assign(size, 0.0f);
  p_hat_.assign(first_size_, 0.0f);
}

namespace {

Eigen::Map<RowMatrixXf> MatrixAt(float* data, std::size_t rows, std::size_t cols) {
  return {data, static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols)};
}

MatrixView ViewAt(const float* data, std::size_t rows, std::size_t cols) {
  return MatrixView::RowMajor(data, static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols));
}

}  // namespace

void LowRankReduce::First(std::span<const float> progress, std::span<float> out) {
  MURMUR_CHECK(progress.size() == m_.size() && out.size() == first_size_);
  std::copy(progress.begin(), progress.end(), m_.begin());
  if (error_feedback_)
    for (std::size_t k = 0; k < m_.size(); ++k) m_[k] += residual_[k];
  for (const Tensor& t : tensors_) {
    if (t.rank == 0) {
      std::copy_n(m_.begin() + static_cast<std::ptrdiff_t>(t.offset), t.size,
                  out.begin() + static_cast<std::ptrdiff_t>(t.first_at));
      continue;
    }
    Gemm(ViewAt(m_.data() + t.offset, t.rows, t.cols), ViewAt(q_.data() + t.q_at, t.cols, t.rank),
         out.data() + t.first_at, static_cast<std::int64_t>(t.rank), GemmMode::kSet);
  }
}

void LowRankReduce::Second(std::span<const float> first_mean, std::span<float> out) {
  MURMUR_CHECK(first_mean.size() == first_size_ && out.size() == q_.size());
  std::copy(first_mean.begin(), first_mean.end(), p_hat_.begin());
  for (const Tensor& t : tensors_) {
    if (t.rank == 0) continue;
    RowMatrixXf p = MatrixAt(p_hat_.data() + t.first_at, t.rows, t.rank);
    compression::OrthonormalizeColumns(p);
    MatrixAt(p_hat_.data() + t.first_at, t.rows, t.rank) = p;
    Gemm(ViewAt(m_.data() + t.offset, t.rows, t.cols).T(), ViewAt(p.data(), t.rows, t.rank),
         out.data() + t.q_at, static_cast<std::int64_t>(t.rank), GemmMode::kSet);
  }
}

void LowRankReduce::Finish(std::span<const float> second_mean, std::span<float> agreed) {
  MURMUR_CHECK(second_mean.size() == q_.size() && agreed.size() == m_.size());
  std::copy(second_mean.begin(), second_mean.end(), q_.begin());  // the next round's warm start
  for (const Tensor& t : tensors_) {
    if (t.rank == 0) {
      std::copy_n(p_hat_.begin() + static_cast<std::ptrdiff_t>(t.first_at), t.size,
                  agreed.begin() + static_cast<std::ptrdiff_t>(t.offset));
      continue;
    }
    Gemm(ViewAt(p_hat_.data() + t.first_at, t.rows, t.rank), ViewAt(q_.data() + t.q_at, t.cols, t.rank).T(),
         agreed.data() + t.offset, static_cast<std::int64_t>(t.cols), GemmMode::kSet);
  }
  if (error_feedback_)
    for (std::size_t k = 0; k < m_.size(); ++k) residual_[k] = m_[k] - agreed[k];
}

void LowRankReduce::ExportState(NodeState& out) const {
  if (error_feedback_) out.vectors["lowrank/residual"] = residual_;
  out.wide["lowrank/q"].assign(q_.begin(), q_.end());
}

Status LowRankReduce::ImportState(const NodeState& state) {
  if (error_feedback_) {
    auto e = state.vectors.find("lowrank/residual");
    if (e == state.vectors.end() || e->second.size() != residual_.size())
      return Status::InvalidArgument("node state vector 'lowrank/residual' is missing or not of " +
                                     std::to_string(residual_.size()) + " elements");
    residual_ = e->second;
  }
  auto q = state.wide.find("lowrank/q");
  if (q == state.wide.end() || q->second.size() != q_.size())
    return Status::InvalidArgument("node state vector 'lowrank/q' is missing or not of " +
                                   std::to_string(q_.size()) + " elements (PowerSGD rank " +
                                   "and model must be the checkpoint's)");
  for (std::size_t k = 0; k < q_.size(); ++k) {
    const double v = q->second[k];
    if (!std::isfinite(v)) return Status::InvalidArgument("node state vector 'lowrank/q' is not finite");
    q_[k] = static_cast<float>(v);
  }
  return Status::Ok();
}

}  // namespace murmur::gossip
