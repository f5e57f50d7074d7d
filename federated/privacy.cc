#include "federated/privacy.h"

#include <cmath>

#include "core/check.h"

namespace murmur::federated {

double L2Norm(std::span<const float> v) {
  double s = 0;
  for (float x : v) s += static_cast<double>(x) * x;
  return std::sqrt(s);
}

double ClipToNorm(std::span<float> v, double clip) {
  MURMUR_CHECK(clip > 0);
  const double norm = L2Norm(v);
  if (norm > clip) {
    // Float rounding can leave the scaled norm a hair above C; shrink by one
    // part in 10^6 more so that ||v|| <= C holds exactly in double.
    const auto scale = static_cast<float>(clip / norm * (1 - 1e-6));
    for (float& x : v) x *= scale;
  }
  return norm;
}

void AddGaussianNoise(std::span<double> v, double stddev, Rng& rng) {
  if (stddev <= 0) return;
  for (double& x : v) x += stddev * rng.Normal();
}

void AddGaussianNoise(std::span<float> v, double stddev, Rng& rng) {
  if (stddev <= 0) return;
  for (float& x : v) x = static_cast<float>(x + stddev * rng.Normal());
}

void AdaptiveClip::Update(std::size_t unclipped, std::size_t count, Rng& rng) {
  MURMUR_CHECK(count > 0);
  double b = static_cast<double>(unclipped);
  if (options_.count_stddev > 0) b += options_.count_stddev * rng.Normal();
  b /= static_cast<double>(count);
  clip_ *= std::exp(-options_.lr * (b - options_.target_quantile));
}

}  // namespace murmur::federated
