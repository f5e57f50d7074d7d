#include "sim/adversary/byzantine_placement.h"

#include "core/check.h"
#include "core/rng.h"

namespace murmur::sim {

AttachedGraph AttachByzantine(const topology::Graph& honest, std::size_t f, bool dumbbell,
                              std::uint64_t seed) {
  MURMUR_CHECK(!honest.directed());
  const NodeId n = honest.num_nodes();
  MURMUR_CHECK(n >= (dumbbell ? 2u : 1u));
  AttachedGraph a;
  if (dumbbell) {
    for (std::size_t k = 0; k < f; ++k) a.targets.push_back(k % 2 == 0 ? n / 2 - 1 : n / 2);
  } else {
    std::vector<NodeId> ids(n);
    for (NodeId i = 0; i < n; ++i) ids[i] = i;
    // The draw of ChooseByzantine: with members placement the same seed would make these nodes Byzantine.
    Rng rng(seed, n, RngPurpose::kAttack);
    rng.Shuffle(std::span<NodeId>(ids));
    for (std::size_t k = 0; k < f; ++k) a.targets.push_back(ids[k % n]);
  }
  std::vector<topology::Edge> edges = honest.Edges();
  for (std::size_t k = 0; k < f; ++k) edges.push_back({a.targets[k], static_cast<NodeId>(n + k)});
  a.graph = topology::Graph::FromEdgesDedup(static_cast<NodeId>(n + f), edges);
  return a;
}

topology::WeightOptions AttachedWeights(bool dumbbell) {
  return topology::WeightOptions{
      dumbbell ? topology::WeightRule::kMaxDegree : topology::WeightRule::kMetropolisHastings, false};
}

}  // namespace murmur::sim
