#include "ml/softmax.h"

#include <cmath>

#include "core/check.h"

namespace murmur::ml {

double SoftmaxCrossEntropy(MatrixMap p, const Dataset& data, std::span<const SampleIndex> rows,
                           float* row_max, float* row_sum, std::int64_t* correct, std::int32_t* pred) {
  using ColumnMap = Eigen::Map<Eigen::VectorXf>;
  const Eigen::Index m = p.rows();
  const auto c = static_cast<int>(p.cols());
  ColumnMap mx(row_max, m), sum(row_sum, m);
  mx = p.rowwise().maxCoeff();
  p.colwise() -= mx;
  double loss = 0;
  for (Eigen::Index i = 0; i < m; ++i) {
    int y = data.labels[rows[static_cast<std::size_t>(i)]];
    MURMUR_CHECK(y >= 0 && y < c);
    Eigen::Index arg;
    p.row(i).maxCoeff(&arg);
    if (correct != nullptr && arg == y) ++*correct;
    if (pred != nullptr) pred[i] = static_cast<std::int32_t>(arg);
    loss -= p(i, y);  // z_y - max, before exponentiation
  }
  p.array() = p.array().exp();
  sum = p.rowwise().sum();
  for (Eigen::Index i = 0; i < m; ++i) loss += std::log(static_cast<double>(sum[i]));
  p.array().colwise() /= sum.array();
  return loss;
}

void SoftmaxGradient(MatrixMap p, const Dataset& data, std::span<const SampleIndex> rows, std::size_t batch) {
  for (Eigen::Index i = 0; i < p.rows(); ++i) p(i, data.labels[rows[static_cast<std::size_t>(i)]]) -= 1.0f;
  p *= 1.0f / static_cast<float>(batch);
}

}  // namespace murmur::ml
