#include "gossip/robust_mixing.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/check.h"
#include "robust/rules.h"

namespace murmur::gossip {

Result<MixingOptions> ParseMixingRule(const std::string& spec, std::size_t suspects) {
  MixingOptions o;
  o.suspects = suspects;
  const auto colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  const std::string arg = colon == std::string::npos ? "" : spec.substr(colon + 1);
  double value = 0;
  if (colon != std::string::npos) {
    char* end = nullptr;
    value = std::strtod(arg.c_str(), &end);
    if (arg.empty() || end != arg.c_str() + arg.size() || !std::isfinite(value)) {
      return Status::InvalidArgument("gossip aggregation '" + spec + "': '" + arg + "' is not a number");
    }
  }
  if (name == "mean" && colon == std::string::npos) {
    o.rule = MixingRule::kMean;
  } else if (name == "median" && colon == std::string::npos) {
    o.rule = MixingRule::kMedian;
  } else if (name == "clipped-weighted" && colon == std::string::npos) {
    o.rule = MixingRule::kClipped;
    o.radius = RadiusRule::kWeighted;
  } else if (name == "clipped") {
    o.rule = MixingRule::kClipped;
    if (colon != std::string::npos) {
      if (!(value > 0))
        return Status::InvalidArgument("gossip aggregation '" + spec + "': radius must be > 0");
      o.clip_radius = value;
    }
  } else if (name == "trimmed-mean") {
    o.rule = MixingRule::kTrimmedMean;
    if (colon != std::string::npos) {
      if (value < 0 || value != std::floor(value) || value > 1e6) {
        return Status::InvalidArgument("gossip aggregation '" + spec +
                                       "': B must be a whole number of values in [0, 1000000]");
      }
      o.trim = static_cast<std::size_t>(value);
    }
  } else {
    return Status::InvalidArgument(
        "gossip aggregation '" + spec +
        "' is not one of mean, clipped, clipped-weighted, clipped:TAU, median, trimmed-mean[:B]");
  }
  return o;
}

namespace {

// The finite distances' positions, farthest first; ties by position, so the
// result does not depend on the sort. A model with a non-finite coordinate is
// dropped by ClipWeights: it is neither suspected nor trusted.
std::vector<std::size_t> FarthestFirst(std::span<const double> distances) {
  std::vector<std::size_t> order;
  for (std::size_t j = 0; j < distances.size(); ++j) {
    if (std::isfinite(distances[j])) order.push_back(j);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return distances[x] > distances[y]; });
  return order;
}

}  // namespace

double OrderClipRadius(std::span<const double> distances, std::size_t suspects) {
  const std::vector<std::size_t> order = FarthestFirst(distances);
  if (suspects == 0 || order.empty()) return std::numeric_limits<double>::infinity();
  return distances[order[std::min(suspects, order.size() - 1)]];
}

double WeightedClipRadius(std::span<const double> distances, std::span<const float> weights,
                          std::size_t suspects) {
  MURMUR_CHECK(distances.size() == weights.size());
  const std::vector<std::size_t> order = FarthestFirst(distances);
  const std::size_t b = std::min(suspects, order.size());
  if (b == 0) return std::numeric_limits<double>::infinity();
  double delta = 0, good = 0;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::size_t j = order[k];
    if (k < b) {
      delta += weights[j];
    } else {
      good += weights[j] * distances[j] * distances[j];
    }
  }
  return std::sqrt(good / delta);
}

double ClipRadius(const MixingOptions& options, std::span<const double> distances,
                  std::span<const float> weights) {
  if (options.clip_radius > 0) return options.clip_radius;
  std::size_t suspects = options.suspects;
  if (options.honest_majority) {
    const auto k = static_cast<std::size_t>(
        std::count_if(distances.begin(), distances.end(), [](double d) { return std::isfinite(d); }));
    suspects = std::min(suspects, k == 0 ? 0 : (k - 1) / 2);
  }
  if (options.radius == RadiusRule::kWeighted) return WeightedClipRadius(distances, weights, suspects);
  return OrderClipRadius(distances, suspects);
}

void ClipWeights(std::span<const double> distances, double tau, std::span<float> weights) {
  MURMUR_CHECK(distances.size() == weights.size() && tau >= 0);
  for (std::size_t j = 0; j < weights.size(); ++j) {
    if (!std::isfinite(distances[j])) {
      weights[j] = 0;  // CLIP of a vector with an infinite or NaN coordinate is not defined
      continue;
    }
    const double s = robust::ClipScale(distances[j], tau);
    if (s < 1) weights[j] = static_cast<float>(weights[j] * s);
  }
}

void MixNeighbourhood(const MixingOptions& options, std::span<const float> self,
                      std::span<const float* const> neighbours, std::span<float> out) {
  MURMUR_CHECK(options.rule == MixingRule::kMedian || options.rule == MixingRule::kTrimmedMean);
  const std::size_t d = self.size();
  // Sorting needs an order: a model with a non-finite coordinate is left out.
  auto finite = [](std::span<const float> x) {
    return std::all_of(x.begin(), x.end(), [](float v) { return std::isfinite(v); });
  };
  std::vector<std::span<const float>> all;
  all.reserve(neighbours.size() + 1);
  if (finite(self)) all.push_back(self);
  for (const float* p : neighbours) {
    if (finite({p, d})) all.emplace_back(p, d);
  }
  if (all.empty()) {
    std::copy(self.begin(), self.end(), out.begin());
    return;
  }
  std::vector<double> result(d);
  if (options.rule == MixingRule::kMedian) {
    robust::CoordinateMedian(all, result);
  } else {
    robust::TrimmedMean(all, std::min(options.trim, (all.size() - 1) / 2), result);
  }
  std::transform(result.begin(), result.end(), out.begin(), [](double v) { return static_cast<float>(v); });
}

}  // namespace murmur::gossip
