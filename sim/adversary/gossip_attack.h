// Byzantine gossip nodes: the models they craft for a target neighbour i.
//
// Every attack is computed from the honest models of the round, as an
// omniscient, colluding adversary would (the threat model of He, Karimireddy
// and Jaggi 2022, Sec. 2): the target's own x_i and the models x_k of its
// good in-neighbours, with the target's weights W_ik.
//
//   sign-flip   -s x_b, where x_b is the mean of the honest models the
//               attacker b itself receives (its model had it gossiped
//               honestly); s = attack_scale (the "bit flipping" of He et al.)
//   alie        mu - z sigma over {x_i} and the x_k, coordinate-wise
//               (Baruch, Baruch and Goldberg, NeurIPS 2019, applied to the
//               target's neighbourhood as in He et al.'s experiments), with
//               z = federated::AlieZ(n, f) for n nodes and f attackers
//   ipm         -eps mu over {x_i} and the x_k (Xie, Koyejo and Gupta, UAI 2020)
//   dissensus   x_i - eps sum_k W_ik (x_k - x_i) / delta_i, delta_i = sum of the
//               weights W_ib of i's Byzantine in-neighbours (He et al. 2022,
//               Sec. 5, "dissensus attack"): together the attackers cancel
//               eps times the honest gossip step of i, so for eps > 1 they
//               push i away from its good neighbours.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/env.h"
#include "core/status.h"
#include "engine/plan.h"

namespace murmur::sim {

// The spec's `attack` for gossip, as its plan reads it (engine/plan.h).
using GossipAttack = engine::GossipAttack;

// Which of n nodes are Byzantine: llround(fraction n) of them, a function of the seed.
std::vector<bool> ChooseByzantine(NodeId n, double fraction, std::uint64_t seed);

// The honest models the crafted model is computed from.
struct AttackView {
  std::span<const float> target;             // x_i (sign-flip: unused)
  std::vector<std::span<const float>> good;  // x_k of the target's good in-neighbours
  std::vector<double> good_weights;          // W_ik (dissensus)
  double byzantine_weight = 0;               // delta_i (dissensus)
};

struct AttackParams {
  GossipAttack kind = GossipAttack::kNone;
  double scale = 1;  // sign-flip s, ipm and dissensus epsilon
  double alie_z = 0;
};

// Writes the crafted model into `out` (the target's size). For sign-flip,
// `view.good` holds the models the attacker receives and `view.target` is ignored.
// REQUIRES: kind != kNone; every model of out's size; for sign-flip a non-empty view.good.
void CraftAttack(const AttackParams& params, const AttackView& view, std::span<float> out);

}  // namespace murmur::sim
