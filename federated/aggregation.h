// Aggregation of a round's client updates: the mean, or a robust rule when some
// of them may be Byzantine (arbitrary, possibly colluding).
//
//   mean               sample-weighted average (not robust; FedAvg)
//   median             coordinate-wise median (Yin et al., ICML 2018)
//   trimmed-mean:B     per coordinate, drop the floor(B K) largest and smallest
//                      values and average the rest (Yin et al. 2018), 0 <= B < 0.5
//   krum               the update with the smallest sum of squared distances to
//                      its K - f - 2 nearest others (Blanchard et al., NeurIPS 2017)
//   multi-krum:M       the average of the M updates with the smallest Krum
//                      scores (one scoring pass; Blanchard et al. 2017, Sec. 4)
//   centered-clipping:T:L  v <- v + (1/K) sum_i (x_i - v) min(1, T / ||x_i - v||),
//                      L iterations (default 1) from the previous round's aggregate
//                      (Karimireddy, He and Jaggi, ICML 2021, Eq. 2)
// The robust rules need every update at once; the server holds them only
// when the rule is not `mean`.
//
// The per-coordinate and distance computations are robust/rules.h; this
// header adds the rule names, their parameters and the checks on the input.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "robust/rules.h"

namespace murmur::federated {

enum class AggregationRule { kMean, kMedian, kTrimmedMean, kKrum, kMultiKrum, kCenteredClipping };

struct RobustOptions {
  AggregationRule rule = AggregationRule::kMean;
  double trim_beta = 0.1;  // trimmed mean: fraction cut at each end
  std::size_t krum_f = 1;  // Krum: assumed number of Byzantine updates
  std::size_t krum_m = 0;  // Multi-Krum: updates averaged (0: K - f)
  double clip_tau = 1.0;   // centered clipping radius
  int clip_iters = 1;      // centered clipping iterations L
};

// Parses "mean", "median", "trimmed-mean[:B]", "krum", "multi-krum[:M]", "centered-clipping[:T[:L]]".
Result<RobustOptions> ParseRobustRule(const std::string& spec);

// Krum scores of every update (sum of squared distances to its K - f - 2
// nearest others). REQUIRES: all updates of one size. The rule functions
// themselves live in robust/rules.h, shared with robust gossip mixing.
using robust::KrumScores;

// Aggregates `updates` into `out` (size d) by `options.rule`. `weights` are the
// sample weights used by `mean` (uniform when empty). `center` is centered
// clipping's starting point (the previous aggregate; zero when empty).
// InvalidArgument when there are no updates, sizes differ, or the rule needs
// more updates than given (Krum needs K > f + 2).
Status Aggregate(const RobustOptions& options, std::span<const std::span<const float>> updates,
                 std::span<const double> weights, std::span<const double> center, std::span<double> out);

}  // namespace murmur::federated
