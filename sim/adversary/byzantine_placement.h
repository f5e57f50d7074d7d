// Where the Byzantine nodes of a gossip simulation sit (`attack_placement`).
//
//   members   f = llround(attack_fraction x nodes) of the graph's own nodes,
//             chosen by the seed (ChooseByzantine), keep their place, degree
//             and weights: an attacked node may lose half of its honest
//             neighbours (on a ring, its gossip with one side).
//   attached  the setting of He, Karimireddy and Jaggi (2022, arXiv
//             2202.01545, experiments, and the authors' code, codes/graph_utils.py
//             Dumbbell, honest_majority.py MaliciousRing): the `nodes` graph
//             stays whole and honest, and f extra Byzantine nodes, ids nodes ..
//             nodes + f - 1, are each joined by one edge to an honest node.
//             On a dumbbell they sit on the two ends of the bridge, alternately
//             (the paper's Dumbbell(q, qb): qb attackers on each bridge end, the
//             information bottleneck); elsewhere on distinct honest nodes chosen
//             by the seed. Weights, unless `weights` names a rule: max-degree on
//             the dumbbell (W_ij = 1/(1 + d_max) = 1/(q + qb + 1) on every edge,
//             as the paper's Dumbbell), Metropolis-Hastings otherwise (the
//             paper's metropolis_weight, used for its attacked rings).
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/plan.h"
#include "topology/graph.h"
#include "topology/weights.h"

namespace murmur::sim {

// The spec's `attack_placement`, as its plan reads it (engine/plan.h).
using AttackPlacement = engine::AttackPlacement;

struct AttachedGraph {
  topology::Graph graph;        // the honest graph's n nodes and edges, plus f nodes and f edges
  std::vector<NodeId> targets;  // targets[k]: the honest node Byzantine node n + k is joined to
};

// Joins f Byzantine nodes to `honest` as above; `dumbbell` says that `honest`
// is topology::Dumbbell(n) (bridge (n/2 - 1, n/2)). When f exceeds the honest
// nodes (not on a dumbbell), targets repeat in the seed's order.
// REQUIRES: !honest.directed(), honest.num_nodes() >= 2 when dumbbell, >= 1 otherwise.
AttachedGraph AttachByzantine(const topology::Graph& honest, std::size_t f, bool dumbbell,
                              std::uint64_t seed);

// The paper's weights for the attached graph (above).
topology::WeightOptions AttachedWeights(bool dumbbell);

}  // namespace murmur::sim
