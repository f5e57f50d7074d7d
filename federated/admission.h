// What an aggregator (FedServer, EdgeAggregator) checks in a client's result
// before it uses it (docs/security.md "Insiders"). A refused result is
// counted (Env::Refuse), booked against its sender and never aggregated; it
// is the client's answer for its round, an empty one, so nobody waits for it.
//
//   implausible  a weight (the sample count n_i a result claims) that is not
//                finite, <= 0, or above `max_weight`: no result may
//                outweigh the largest honest one;
//   not_finite   a non-finite loss, or NaN or infinite values (the wire
//                decoder refuses them already; this also covers the
//                simulator, which moves messages without encoding them);
//   implausible  a difference Delta_i (y_i - x for a model result) longer
//                than `plausibility` times the global model it was trained
//                from: ||Delta_i|| > rho ||x||. Honest local training moves
//                a model by a fraction of its norm (measured largest ratios
//                0.11 for the default FedAvg job, 0.42 at 5 epochs with
//                learning rate 0.3, 5.0 for a softmax at learning rate 1 and
//                5 epochs), so the default rho = 10 leaves honest results
//                alone and stops absurd ones (1e30, 3.4e38, -50 x) before
//                they reach the aggregate; under the plain mean, what passes
//                moves the model by at most (w_i / sum w) rho ||x|| a round.
//                A global model that is 0 cannot judge lengths: nothing is
//                implausible then. rho = 0 turns the check off. With
//                client-side DP the bound is rho max(||x||, C + z C
//                sqrt(d / K)): the noise an honest client adds has a length
//                of its own.
//
// Norms are core/reduce.h's fixed-order sums (in double where a float sum
// overflows), so a verdict is the same on every machine, in the simulator
// and in the daemon.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "core/env.h"
#include "core/param_vector.h"
#include "core/rng.h"
#include "federated/attack.h"
#include "federated/messages.h"

namespace murmur::federated {

struct ResultBounds {
  double max_weight = 0;    // 0: no bound on a result's weight
  double plausibility = 0;  // rho (0: no bound on a difference's length)
  // A length the bound never goes below: rho max(||x||, length_floor). With
  // client-side DP an honest difference carries noise of its own length
  // (ClientNoiseLength), whatever ||x|| is.
  double length_floor = 0;
};

// The length an honest client-side DP result can reach: its clipped
// difference (C) plus noise of stddev z C / sqrt(K) in each of d
// coordinates, sqrt(d) times that in expectation.
double ClientNoiseLength(double clip, double noise_multiplier, std::size_t clients_per_round, std::size_t d);

// The header and values of a result: weight, loss, finite values.
std::optional<Refusal> CheckResult(const FedMessage& m, const ResultBounds& bounds);

// The verdict on a result's difference `delta` (in double) against the
// model `x` it was trained from: implausible, or nullopt to use it.
std::optional<Refusal> JudgeDifference(std::span<const double> delta, std::span<const float> x,
                                       const ResultBounds& bounds);

// The simulated attack on a round's held updates (ApplyAttack), then the
// crafted ones judged as a result from the network is: the indices i with
// attacker[i] whose held[i] (times tau[i] with FedNova, whose held updates
// were divided by their steps) JudgeDifference refuses. So the simulator,
// whose server plays every attacker, refuses what murmurd refuses on arrival
// from a client daemon that plays the same attack. `scratch` is resized.
std::vector<std::size_t> PoisonAndJudge(AttackKind attack, double attack_scale, Rng& rng,
                                        std::vector<ParamVector>& held, const std::vector<bool>& attacker,
                                        const std::vector<double>& tau, bool fednova,
                                        std::span<const float> x, const ResultBounds& bounds,
                                        std::vector<double>& scratch);

// The sums a round keeps over its results, taken in arrival order.
struct HeldSums {
  double weight = 0;  // sum w_i
  double tau = 0;     // sum w_i tau_i
  double loss = 0;    // sum loss_i
};
HeldSums SumHeld(const std::vector<double>& weight, const std::vector<double>& tau,
                 const std::vector<double>& loss);

// Erases the entries at `indices` (ascending) from each of `vectors`,
// keeping the others in order: the parallel vectors of a round's held results.
template <typename... V>
void EraseIndices(const std::vector<std::size_t>& indices, V&... vectors) {
  const auto erase = [&indices](auto& v) {
    std::size_t kept = 0, r = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (r < indices.size() && indices[r] == i) {
        ++r;
        continue;
      }
      if (kept != i) v[kept] = std::move(v[i]);
      ++kept;
    }
    v.erase(v.begin() + static_cast<std::ptrdiff_t>(kept), v.end());
  };
  (erase(vectors), ...);
}

}  // namespace murmur::federated
