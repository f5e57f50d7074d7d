// The SecAgg+ neighbour graph and threshold (Bell et al., CCS 2020, section 3).
//
// SecAgg (Bonawitz et al. 2017) has every client share its secrets with every
// other: O(n) work and bytes per client. SecAgg+ replaces the complete graph
// by a k-regular one: the participants U1 (ascending ids) are put in a random
// order drawn from a public 32-byte graph seed, and each is joined to the k/2
// before and after it on that ring (the Harary graph H_{k,n} under a random
// labelling, Bell et al. section 3.2). Pairwise masks and Shamir shares only
// cross graph edges. k = 0, or k >= n - 1, gives the complete graph.
//
// The Shamir threshold of a neighbourhood of size k is
//   t = max(floor(k / 2) + 1, ceil(fraction k)),
// a strict majority at least: the k holders of a client's shares cannot
// form two disjoint groups of t, so a server that lies to different
// neighbours (some told "u dropped", others "u survived") still never gets t
// shares of both u's self-mask seed and u's mask key.
//
// The permutation is a Fisher-Yates shuffle driven by the ChaCha20 words of
// the seed (nonce "graph"), with rejection sampling for uniform indices, so
// that any implementation derives the same graph.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "core/env.h"
#include "crypto/mask_stream.h"

namespace murmur::federated {

// The neighbourhood size of n participants for k requested (0: all others).
std::size_t NeighbourCount(std::size_t n, std::size_t k);

// t for a neighbourhood of k (see above). REQUIRES: k >= 1, 0 <= fraction <= 1.
std::size_t SecAggThreshold(std::size_t k, double fraction);

// The neighbours of `self` (ascending), among `participants` (ascending,
// distinct, containing self), for k requested. REQUIRES: k even or 0.
std::vector<NodeId> SecAggNeighbours(const crypto::MaskSeed& graph_seed, std::span<const NodeId> participants,
                                     NodeId self, std::size_t k);

}  // namespace murmur::federated
