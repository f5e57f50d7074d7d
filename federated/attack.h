// Simulated Byzantine clients: model-poisoning attacks on the updates of a
// round, to test robust aggregation.
//
//   sign-flip   attacker sends -s Delta_i (its own honest update, reversed and scaled)
//   gaussian    attacker sends N(0, (s ||Delta_i|| / sqrt(d))^2 I): noise s times
//               the size of an honest update
//   alie        "A little is enough" (Baruch, Baruch and Goldberg, NeurIPS 2019):
//               every attacker sends mu - z_max sigma, with mu, sigma the
//               coordinate-wise mean and standard deviation of the round's honest
//               updates and z_max = Phi^-1((K - s) / K), s = floor(K/2 + 1) - f
//   ipm         inner-product manipulation (Xie, Koyejo and Gupta, UAI 2020):
//               every attacker sends -s mu (s = epsilon; 0.1 in the paper for Krum/median)
//   label-flip  data poisoning: the attacker trains on its samples with labels
//               y -> C - 1 - y (Fang et al., USENIX Security 2020) and sends
//               that update as is; the simulator gives attackers flipped data
//               (sim/adversary/label_flip.h) and ApplyAttack leaves their updates alone
// The simulator applies them where the server receives the round's updates,
// so ALIE and IPM are omniscient and colluding (the strongest setting of both
// papers); every attacker first computes its honest update, which ALIE and IPM
// include in mu and sigma.
// On murmurd (node/job/federated_job.h) a sign-flip or gaussian attacker daemon
// applies ApplyAttack to its own update (ClientOptions::attack, federated/client.h),
// as neither needs other clients' updates; ALIE and IPM stay at the server.
//
// Thread-safety: pure functions.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/status.h"

namespace murmur::federated {

enum class AttackKind { kNone, kSignFlip, kGaussian, kAlie, kIpm, kLabelFlip };

// Whether the attack rewrites updates at the server (all but label-flip).
inline bool PoisonsUpdates(AttackKind kind) {
  return kind != AttackKind::kNone && kind != AttackKind::kLabelFlip;
}

Result<AttackKind> ParseAttack(const std::string& name);

// Phi^-1(p), the standard normal quantile. REQUIRES: 0 < p < 1.
double NormalQuantile(double p);

// ALIE's z_max for K updates of which f are Byzantine.
double AlieZ(std::size_t k, std::size_t f);

// Rewrites the updates of the attackers in place. `attacker[i]` says whether
// update i comes from an attacker; `scale` is s above.
void ApplyAttack(AttackKind kind, double scale, std::span<const std::span<float>> updates,
                 const std::vector<bool>& attacker, Rng& rng);

}  // namespace murmur::federated
