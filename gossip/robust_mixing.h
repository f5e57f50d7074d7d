// Robust mixing: how a gossip node combines its model x_i with the models
// x_j of its in-neighbours when some neighbours may be Byzantine.
//
//   mean              x_i <- sum_j W_ij x_j: plain gossip (W_ii included)
//   clipped[:TAU]     ClippedGossip, self-centred clipping (He, Karimireddy and
//                     Jaggi 2022, arXiv 2202.01545, Alg. 1):
//                       x_i <- x_i + sum_{j != i} W_ij CLIP(x_j - x_i, tau_i),
//                       CLIP(z, tau) = z min(1, tau / ||z||).
//                     With TAU the radius is fixed; without it it is adaptive:
//                     the node assumes that its `suspects` farthest in-neighbours
//                     may be Byzantine, with total weight delta_i, and takes the
//                     radius of the paper's analysis (Sec. 4: tau_i^2 =
//                     (1/delta_i) sum over the good neighbours of W_ij ||x_j - x_i||^2)
//                     with the remaining, nearer neighbours as the good set:
//                       tau_i = sqrt( (1/delta_i) sum_{j not suspected} W_ij d_j^2 ).
//                     The suspected neighbours then move x_i by at most
//                     delta_i tau_i = sqrt(delta_i sum_{good} W_ij d_j^2), a bound
//                     set by how far apart the good models are, not by what the
//                     attackers send. On a ring with suspects = 1 this is the
//                     second-largest neighbour distance, the rule of the authors'
//                     reference code (epfml/byzantine-robust-decentralized-optimizer).
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

struct MixingOptions {
  MixingRule rule = MixingRule::kMean;
  double clip_radius = 0;    // clipped: fixed tau; 0 for the adaptive radius
  std::size_t suspects = 1;  // adaptive clipped: farthest in-neighbours assumed Byzantine
  std::size_t trim = 1;      // trimmed-mean: values dropped at each end
};

// Parses "mean", "clipped", "clipped:TAU", "median", "trimmed-mean" or
// "trimmed-mean:B"; `suspects` is the adaptive radius' assumption.
Result<MixingOptions> ParseMixingRule(const std::string& spec, std::size_t suspects = 1);

// The adaptive radius above from the distances d_j = ||x_j - x_i|| and the
// weights W_ij of the in-neighbours (self excluded). +infinity when nobody is
// suspected (suspects = 0); 0 when every neighbour is (the node keeps its own
// model). REQUIRES: distances.size() == weights.size(), weights > 0.
double AdaptiveClipRadius(std::span<const double> distances, std::span<const float> weights,
                          std::size_t suspects);

// The radius `options` gives for these neighbours: fixed or adaptive.
double ClipRadius(const MixingOptions& options, std::span<const double> distances,
                  std::span<const float> weights);

// weights[j] *= min(1, tau / distances[j]). REQUIRES: equal sizes, tau >= 0.
void ClipWeights(std::span<const double> distances, double tau, std::span<float> weights);

// The median or trimmed mean of {self} and the neighbours into `out`.
// REQUIRES: options.rule is kMedian or kTrimmedMean; every vector of out's size.
void MixNeighbourhood(const MixingOptions& options, std::span<const float> self,
                      std::span<const float* const> neighbours, std::span<float> out);

}  // namespace murmur::gossip
