#include "federated/aggregation.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "robust/rules.h"

namespace murmur::federated {

Result<RobustOptions> ParseRobustRule(const std::string& spec) {
  RobustOptions o;
  const auto colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  std::string arg = colon == std::string::npos ? "" : spec.substr(colon + 1);
  // centered-clipping:T:L carries a second number, the iterations L.
  std::string iters;
  if (name == "centered-clipping" && arg.find(':') != std::string::npos) {
    iters = arg.substr(arg.find(':') + 1);
    arg = arg.substr(0, arg.find(':'));
  }
  double value = 0;
  if (!arg.empty()) {
    char* end = nullptr;
    value = std::strtod(arg.c_str(), &end);
    if (end == arg.c_str() || *end != '\0' || !std::isfinite(value)) {
      return Status::InvalidArgument("robust rule '" + spec + "': '" + arg + "' is not a number");
    }
  }
  if (name == "mean" && arg.empty()) {
    o.rule = AggregationRule::kMean;
  } else if (name == "median" && arg.empty()) {
    o.rule = AggregationRule::kMedian;
  } else if (name == "trimmed-mean") {
    o.rule = AggregationRule::kTrimmedMean;
    if (!arg.empty()) o.trim_beta = value;
    if (o.trim_beta < 0 || o.trim_beta >= 0.5) {
      return Status::InvalidArgument("robust rule '" + spec + "': trim fraction must be in [0, 0.5)");
    }
  } else if (name == "krum" && arg.empty()) {
    o.rule = AggregationRule::kKrum;
  } else if (name == "multi-krum") {
    o.rule = AggregationRule::kMultiKrum;
    if (!arg.empty()) {
      if (value < 1 || value != std::floor(value) || value > 1e6) {
        return Status::InvalidArgument("robust rule '" + spec + "': M must be a positive integer");
      }
      o.krum_m = static_cast<std::size_t>(value);
    }
  } else if (name == "centered-clipping") {
    o.rule = AggregationRule::kCenteredClipping;
    if (!arg.empty()) o.clip_tau = value;
    if (!(o.clip_tau > 0)) return Status::InvalidArgument("robust rule '" + spec + "': radius must be > 0");
    if (!iters.empty()) {
      char* end = nullptr;
      const long l = std::strtol(iters.c_str(), &end, 10);
      if (end == iters.c_str() || *end != '\0' || l < 1 || l > 100) {
        return Status::InvalidArgument("robust rule '" + spec +
                                       "': iterations must be an integer in [1, 100]");
      }
      o.clip_iters = static_cast<int>(l);
    }
  } else {
    return Status::InvalidArgument("robust rule '" + spec +
                                   "' is not one of mean, median, trimmed-mean[:B], krum, multi-krum[:M], "
                                   "centered-clipping[:T[:L]]");
  }
  return o;
}

Status Aggregate(const RobustOptions& options, std::span<const std::span<const float>> updates,
                 std::span<const double> weights, std::span<const double> center, std::span<double> out) {
  if (updates.empty()) return Status::InvalidArgument("aggregation of zero updates");
  for (const auto& u : updates) {
    if (u.size() != out.size()) return Status::InvalidArgument("aggregation: update sizes differ");
  }
  if (!weights.empty() && weights.size() != updates.size()) {
    return Status::InvalidArgument("aggregation: one weight per update");
  }
  const std::size_t k = updates.size();
  switch (options.rule) {
    case AggregationRule::kMean: robust::Mean(updates, weights, out); break;
    case AggregationRule::kMedian: robust::CoordinateMedian(updates, out); break;
    case AggregationRule::kTrimmedMean: {
      const auto cut = static_cast<std::size_t>(std::floor(options.trim_beta * static_cast<double>(k)));
      robust::TrimmedMean(updates, std::min(cut, (k - 1) / 2), out);
      break;
    }
    case AggregationRule::kKrum:
    case AggregationRule::kMultiKrum: {
      if (k < options.krum_f + 3) {
        return Status::InvalidArgument("Krum with f = " + std::to_string(options.krum_f) +
                                       " needs at least " + std::to_string(options.krum_f + 3) +
                                       " updates, got " + std::to_string(k));
      }
      std::vector<double> scores = robust::KrumScores(updates, options.krum_f);
      std::vector<std::size_t> order(k);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](std::size_t a, std::size_t b) { return scores[a] < scores[b]; });
      std::size_t m = 1;
      if (options.rule == AggregationRule::kMultiKrum) {
        m = options.krum_m == 0 ? k - options.krum_f : std::min(options.krum_m, k);
      }
      std::vector<std::span<const float>> chosen;
      for (std::size_t i = 0; i < m; ++i) chosen.push_back(updates[order[i]]);
      robust::Mean(chosen, {}, out);
      break;
    }
    case AggregationRule::kCenteredClipping:
      robust::CenteredClipping(updates, options.clip_tau, options.clip_iters, center, out);
      break;
  }
  return Status::Ok();
}

}  // namespace murmur::federated
