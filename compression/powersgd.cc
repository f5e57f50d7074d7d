#include <cmath>
#include <vector>

#include "compression/powersgd.h"
#include "core/gemm.h"
#include "core/reduce.h"

namespace murmur::compression {

void OrthonormalizeColumns(RowMatrixXf& p) {
  // On a column-major copy, so that each column is contiguous for the
  // fixed-order dot products (core/reduce.h).
  const auto rows = static_cast<std::size_t>(p.rows()), cols = static_cast<std::size_t>(p.cols());
  std::vector<float> t(rows * cols);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c)
      t[c * rows + r] = p(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c));
  for (std::size_t c = 0; c < cols; ++c) {
    const std::span<float> col(t.data() + c * rows, rows);
    for (std::size_t prev = 0; prev < c; ++prev) {
      const std::span<const float> q(t.data() + prev * rows, rows);
      const float d = FixedDot(q, col);
      for (std::size_t r = 0; r < rows; ++r) col[r] -= d * q[r];
    }
    const float norm = std::sqrt(FixedSquaredNorm(col));
    for (std::size_t r = 0; r < rows; ++r) col[r] = norm > 1e-12f ? col[r] / norm : 0.0f;
  }
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c)
      p(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)) = t[c * rows + r];
}

std::shared_ptr<const Update> PowerSgdCompressor::Compress(std::span<const float> delta, const Layout& layout,
                                                           CompressorState& state, Rng& rng) const {
  MURMUR_CHECK(layout.num_tensors() == 0 || layout.total_size() == delta.size());
  const std::size_t n = delta.size();
  if (error_feedback() && state.residual.size() != n) state.residual.assign(n, 0.0f);
  Layout flat;
  if (layout.num_tensors() == 0) flat.Add("flat", {static_cast<std::int64_t>(n)});
  const Layout& lay = layout.num_tensors() == 0 ? flat : layout;
  state.powersgd_q.resize(lay.num_tensors());

  std::vector<LowRankSegment> segments;
  std::vector<float> factors;
  for (std::size_t t = 0; t < lay.num_tensors(); ++t) {
    const TensorSpec& spec = lay.tensor(t);
    const auto rows = static_cast<std::size_t>(spec.rows()), cols = static_cast<std::size_t>(spec.cols());
    // M = e + x for this tensor, accumulated in place in the residual.
    float* m_data;
    std::vector<float> local;
    if (error_feedback()) {
      m_data = state.residual.data() + spec.offset;
      for (std::size_t i = 0; i < spec.size; ++i) m_data[i] += delta[spec.offset + i];
    } else {
      local.assign(delta.begin() + static_cast<std::ptrdiff_t>(spec.offset),
                   delta.begin() + static_cast<std::ptrdiff_t>(spec.offset + spec.size));
      m_data = local.data();
    }
    const std::size_t r = std::min<std::size_t>({rank_, rows, cols});
    LowRankSegment seg;
    seg.offset = static_cast<std::uint32_t>(spec.offset);
    seg.data = factors.size();
    if (rows < 2 || cols < 2 || r * (rows + cols) >= rows * cols) {  // no saving: send dense
      seg.rows = static_cast<std::uint32_t>(spec.size);
      seg.cols = 1;
      seg.rank = 0;
      factors.insert(factors.end(), m_data, m_data + spec.size);
      if (error_feedback()) std::fill(m_data, m_data + spec.size, 0.0f);
      segments.push_back(seg);
      continue;
    }
    std::vector<float>& q_store = state.powersgd_q[t];
    if (q_store.size() != cols * r) {  // first round: Q with i.i.d. N(0, 1) entries
      q_store.resize(cols * r);
      for (float& v : q_store) v = static_cast<float>(rng.Normal());
    }
    const MatrixView mv =
        MatrixView::RowMajor(m_data, static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols));
    const MatrixView qv =
        MatrixView::RowMajor(q_store.data(), static_cast<std::int64_t>(cols), static_cast<std::int64_t>(r));
    RowMatrixXf p(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(r));
    Gemm(mv, qv, p.data(), p.cols(), GemmMode::kSet);
    OrthonormalizeColumns(p);
    const MatrixView pv = MatrixView::RowMajor(p.data(), p.rows(), p.cols());
    Gemm(mv.T(), pv, q_store.data(), static_cast<std::int64_t>(r), GemmMode::kSet);
    seg.rows = static_cast<std::uint32_t>(rows);
    seg.cols = static_cast<std::uint32_t>(cols);
    seg.rank = static_cast<std::uint32_t>(r);
    factors.insert(factors.end(), p.data(), p.data() + p.size());
    factors.insert(factors.end(), q_store.begin(), q_store.end());
    if (error_feedback()) {  // e = M - P Q^T: each chain of (-P) Q^T starts from M
      RowMatrixXf minus_p = -p;
      Gemm(MatrixView::RowMajor(minus_p.data(), minus_p.rows(), minus_p.cols()), qv.T(), m_data,
           static_cast<std::int64_t>(cols), GemmMode::kAdd);
    }
    segments.push_back(seg);
  }
  ++state.round;
  return std::make_shared<const Update>(Update::LowRank(n, std::move(segments), std::move(factors)));
}

}  // namespace murmur::compression
