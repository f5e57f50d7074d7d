#include "sim/placement.h"

#include <algorithm>

#include "core/check.h"

namespace murmur::sim {

Placement::Placement(NodeId nodes, int ranks, int rank) : rank_(rank) {
  MURMUR_CHECK(ranks >= 1 && rank >= 0 && rank < ranks);
  first_.resize(static_cast<std::size_t>(ranks) + 1);
  for (int r = 0; r <= ranks; ++r)
    first_[r] = static_cast<NodeId>(static_cast<std::uint64_t>(nodes) * static_cast<std::uint64_t>(r) /
                                    static_cast<std::uint64_t>(ranks));
}

int Placement::RankOf(NodeId node) const {
  MURMUR_CHECK(node < nodes());
  // The last block start not after `node`; empty blocks (more ranks than nodes) are skipped over.
  auto it = std::upper_bound(first_.begin(), first_.end() - 1, node);
  return static_cast<int>(it - first_.begin()) - 1;
}

}  // namespace murmur::sim
