// Lifeguard's two local mechanisms (Dadgar, Phillips and Currey, "Lifeguard:
// Local Health Awareness for More Accurate Failure Detection", 2018,
// arXiv:1707.00788), used by membership/membership.h.
//
// LocalHealth is the Local Health Multiplier (LHM, "local health awareness"): a
// saturating counter in [0, S-1] that rises when the node sees evidence that
// it is itself slow (a probe that failed without the nacks it expected, a
// suspicion about itself it had to refute) and falls on a successful direct
// probe. Probe timeout and probe interval are scaled by (LHM + 1).
//
// SuspicionTimeout is Lifeguard's dynamic suspicion timeout:
//   Min = alpha * max(1, log10(n)) * ProbeInterval,   Max = beta * Min,
//   timeout(C) = max(Min, Max - (Max - Min) * log(C + 1) / log(K + 1)),
// where C is the number of independent confirmations (suspect messages about
// the member from distinct origins other than the first) and K the number
// expected. It starts at Max and shrinks toward Min as confirmations arrive.
//
// Thread-safety: values, used on one node's executor.
#pragma once

#include <algorithm>
#include <cmath>
#include <set>

#include "core/env.h"

namespace murmur::membership {

class LocalHealth {
 public:
  // `max_multiplier` is S; 1 disables the mechanism (the multiplier stays 1).
  explicit LocalHealth(int max_multiplier) : max_(std::max(max_multiplier, 1)) {}

  void Apply(int delta) { score_ = std::clamp(score_ + delta, 0, max_ - 1); }
  int score() const { return score_; }
  int multiplier() const { return score_ + 1; }
  Nanos Scale(Nanos base) const { return base * multiplier(); }

 private:
  int max_;
  int score_ = 0;
};

// The formula above, as a pure function. REQUIRES: min <= max, k >= 0, confirmations >= 0.
inline Nanos SuspicionTimeout(Nanos min, Nanos max, int k, int confirmations) {
  if (k <= 0 || confirmations >= k) return min;
  const double frac = std::log(confirmations + 1.0) / std::log(k + 1.0);
  const double t = static_cast<double>(max.count()) - frac * static_cast<double>((max - min).count());
  return std::max(min, Nanos(std::llround(t)));
}

// Lifeguard's Min for a group of `n` members (self included).
inline Nanos SuspicionMinTimeout(double alpha, std::size_t n, Nanos probe_interval) {
  const double scale = std::max(1.0, std::log10(static_cast<double>(std::max<std::size_t>(n, 1))));
  return Nanos(std::llround(alpha * scale * static_cast<double>(probe_interval.count())));
}

// The state of one suspicion: when it started and who confirmed it.
class Suspicion {
 public:
  // `first_origin` raised the suspicion; it is not counted as a confirmation.
  Suspicion(Nanos start, Nanos min, Nanos max, int k, NodeId first_origin)
      : start_(start), min_(min), max_(max), k_(k) {
    origins_.insert(first_origin);
  }

  // Records a confirmation from `origin`; true when it is new and counts (a
  // repeated origin, or one past K, changes nothing).
  bool Confirm(NodeId origin) {
    if (confirmations() >= k_) return false;
    return origins_.insert(origin).second;
  }
  int confirmations() const { return static_cast<int>(origins_.size()) - 1; }
  Nanos timeout() const { return SuspicionTimeout(min_, max_, k_, confirmations()); }
  Nanos deadline() const { return start_ + timeout(); }
  Nanos start() const { return start_; }

 private:
  Nanos start_, min_, max_;
  int k_;
  std::set<NodeId> origins_;
};

}  // namespace murmur::membership
