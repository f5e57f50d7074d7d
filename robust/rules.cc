#include "robust/rules.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace murmur::robust {

double SquaredDistance(std::span<const float> a, std::span<const float> b) {
  double s = 0;
  for (std::size_t j = 0; j < a.size(); ++j) {
    const double d = static_cast<double>(a[j]) - b[j];
    s += d * d;
  }
  return s;
}

double ClipScale(double norm, double tau) { return norm > tau ? tau / norm : 1.0; }

void Mean(Vectors u, std::span<const double> w, std::span<double> out) {
  std::fill(out.begin(), out.end(), 0.0);
  double total = 0;
  for (std::size_t i = 0; i < u.size(); ++i) {
    const double wi = w.empty() ? 1.0 : w[i];
    total += wi;
    for (std::size_t j = 0; j < out.size(); ++j) out[j] += wi * u[i][j];
  }
  for (double& v : out) v /= total;
}

void TrimmedMean(Vectors u, std::size_t cut, std::span<double> out) {
  std::vector<float> column(u.size());
  const std::size_t k = u.size();
  for (std::size_t j = 0; j < out.size(); ++j) {
    for (std::size_t i = 0; i < k; ++i) column[i] = u[i][j];
    std::sort(column.begin(), column.end());
    double s = 0;
    for (std::size_t i = cut; i < k - cut; ++i) s += column[i];
    out[j] = s / static_cast<double>(k - 2 * cut);
  }
}

void CoordinateMedian(Vectors u, std::span<double> out) {
  std::vector<float> column(u.size());
  const std::size_t k = u.size(), mid = k / 2;
  for (std::size_t j = 0; j < out.size(); ++j) {
    for (std::size_t i = 0; i < k; ++i) column[i] = u[i][j];
    std::nth_element(column.begin(), column.begin() + static_cast<std::ptrdiff_t>(mid), column.end());
    double m = column[mid];
    if (k % 2 == 0) {
      m = 0.5 * (m + *std::max_element(column.begin(), column.begin() + static_cast<std::ptrdiff_t>(mid)));
    }
    out[j] = m;
  }
}

void CenteredClipping(Vectors u, double tau, int iters, std::span<const double> center,
                      std::span<double> out) {
  const std::size_t d = out.size();
  if (center.empty()) {
    std::fill(out.begin(), out.end(), 0.0);
  } else {
    std::copy(center.begin(), center.end(), out.begin());
  }
  std::vector<double> step(d);
  for (int l = 0; l < iters; ++l) {
    std::fill(step.begin(), step.end(), 0.0);
    for (const auto& x : u) {
      double n2 = 0;
      for (std::size_t j = 0; j < d; ++j) n2 += (x[j] - out[j]) * (x[j] - out[j]);
      const double scale = ClipScale(std::sqrt(n2), tau);
      for (std::size_t j = 0; j < d; ++j) step[j] += scale * (x[j] - out[j]);
    }
    for (std::size_t j = 0; j < d; ++j) out[j] += step[j] / static_cast<double>(u.size());
  }
}

std::vector<double> KrumScores(Vectors u, std::size_t f) {
  const std::size_t k = u.size();
  std::vector<double> dist(k * k, 0.0);
  for (std::size_t a = 0; a < k; ++a) {
    for (std::size_t b = a + 1; b < k; ++b) dist[a * k + b] = dist[b * k + a] = SquaredDistance(u[a], u[b]);
  }
  const std::size_t nearest = k >= f + 2 ? k - f - 2 : 0;
  std::vector<double> scores(k), row;
  for (std::size_t a = 0; a < k; ++a) {
    row.clear();
    for (std::size_t b = 0; b < k; ++b) {
      if (b != a) row.push_back(dist[a * k + b]);
    }
    std::sort(row.begin(), row.end());
    scores[a] = std::accumulate(row.begin(), row.begin() + static_cast<std::ptrdiff_t>(nearest), 0.0);
  }
  return scores;
}

}  // namespace murmur::robust
