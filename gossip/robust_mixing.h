// Robust mixing: how a gossip node combines its model x_i with the models
// x_j of its in-neighbours when some neighbours may be Byzantine.
//
//   mean              x_i <- sum_j W_ij x_j: plain gossip (W_ii included)
//   clipped[:TAU]     ClippedGossip, self-centred clipping (He, Karimireddy and
//                     Jaggi 2022, arXiv 2202.01545, Alg. 1):
//                       x_i <- x_i + sum_{j != i} W_ij CLIP(x_j - x_i, tau_i),
//                       CLIP(z, tau) = z min(1, tau / ||z||).
//                     With TAU the radius is fixed; without it it is adaptive:
//                     the node assumes that its b = `suspects` farthest
//                     in-neighbours may be Byzantine and takes as radius the
//                     (b+1)-th largest neighbour distance, the distance of the
//                     farthest neighbour it trusts (the smallest distance when it
//                     has no more than b neighbours). This is the rule of the
//                     authors' reference code (epfml/byzantine-robust-decentralized-
//                     optimizer, codes/aggregator.py, SelfCenteredClipping:
//                     tau = sorted(distances)[-2], i.e. b = 1): every trusted
//                     neighbour passes unclipped and each suspect moves x_i by at
//                     most W_ib tau, a bound set by an honest neighbour's distance.
//   clipped-weighted  the same with the radius of the paper's analysis (Sec. 4:
//                     tau_i^2 = (1/delta_i) sum over the good neighbours
//                     of W_ij ||x_j - x_i||^2), the nearer neighbours standing in
//                     for the good set:
//                       tau_i = sqrt( (1/delta_i) sum_{j not suspected} W_ij d_j^2 ),
//                     delta_i the suspects' total weight. On a ring with b = 1 the
//                     two rules agree; in a clique of k equally weighted
//                     neighbours this radius is about sqrt((k - b)/b) times the typical
//                     distance, so a suspect's pull is that much larger.
//   median            coordinate-wise median of {x_i} and the x_j (unweighted)
//   trimmed-mean[:B]  per coordinate, drop the B (default 1) largest and smallest
//                     of {x_i} and the x_j and average the rest; B is capped so
//                     that at least one value remains
// The neighbourhood rules are robust/rules.h applied to the node's
// neighbourhood, as the federated rules are applied to a round's updates.
//
// ClippedGossip is plain gossip with smaller weights: x_i + sum_j W_ij s_j
// (x_j - x_i) = (1 - sum_j W_ij s_j) x_i + sum_j W_ij s_j x_j with s_j =
// min(1, tau_i / d_j). ClipWeights returns the W_ij s_j, so the node mixes with
// its usual kernel; when nothing is clipped the result is plain gossip, bit for bit.
//
// A neighbour's model with an infinite or NaN coordinate (a Byzantine node
// may send one) is left out by every robust rule: its weight falls back on
// the node, as for a neighbour that missed the round.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace murmur::gossip {

enum class MixingRule { kMean, kClipped, kMedian, kTrimmedMean };
// The adaptive radius of `clipped` (order statistic) and `clipped-weighted`.
enum class RadiusRule { kOrder, kWeighted };

struct MixingOptions {
  MixingRule rule = MixingRule::kMean;
  double clip_radius = 0;                  // clipped: fixed tau; 0 for the adaptive radius
  std::size_t suspects = 1;                // adaptive clipped: farthest in-neighbours assumed Byzantine
  RadiusRule radius = RadiusRule::kOrder;  // adaptive clipped: which rule
  // Adaptive clipped: suspect at most a minority of the in-neighbours,
  // min(suspects, floor((k - 1) / 2)) of k. For nodes that know they have an
  // honest majority of neighbours: a node with 2 neighbours then clips nobody.
  bool honest_majority = false;
  std::size_t trim = 1;  // trimmed-mean: values dropped at each end
};

// Parses "mean", "clipped", "clipped-weighted", "clipped:TAU", "median",
// "trimmed-mean" or "trimmed-mean:B"; `suspects` is the adaptive radius' assumption.
Result<MixingOptions> ParseMixingRule(const std::string& spec, std::size_t suspects = 1);

// The adaptive radii above from the distances d_j = ||x_j - x_i|| of the
// in-neighbours (self excluded) and, for the weighted rule, their weights W_ij.
// Distances that are not finite take no part. Both are +infinity when nobody is
// suspected (suspects = 0) or no distance is finite. When every neighbour is
// suspected, OrderClipRadius is the smallest distance (the reference code's
// choice for a node with one neighbour: it mixes unclipped) and
// WeightedClipRadius is 0 (the node keeps its own model).
// REQUIRES: distances.size() == weights.size(), weights > 0.
double OrderClipRadius(std::span<const double> distances, std::size_t suspects);
double WeightedClipRadius(std::span<const double> distances, std::span<const float> weights,
                          std::size_t suspects);

// The radius `options` gives for these neighbours: fixed, or adaptive by its
// rule, with the suspects capped when `honest_majority` is set.
double ClipRadius(const MixingOptions& options, std::span<const double> distances,
                  std::span<const float> weights);

// weights[j] *= min(1, tau / distances[j]). REQUIRES: equal sizes, tau >= 0.
void ClipWeights(std::span<const double> distances, double tau, std::span<float> weights);

// The median or trimmed mean of {self} and the neighbours into `out`.
// REQUIRES: options.rule is kMedian or kTrimmedMean; every vector of out's size.
void MixNeighbourhood(const MixingOptions& options, std::span<const float> self,
                      std::span<const float* const> neighbours, std::span<float> out);

}  // namespace murmur::gossip
