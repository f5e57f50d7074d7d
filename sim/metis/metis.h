// Graph partitioning for the placement of a partitioned simulation's nodes
// (sim/ranks/placement.h): METIS's multilevel k-way partition (Karypis and Kumar,
// SIAM J. Sci. Comput. 1998), which cuts few edges while keeping the parts
// within a few percent of equal size. Few cut edges mean few messages
// between ranks.
//
// This folder is the only place that sees METIS (cmake/MurmurMetis.cmake,
// Debian libmetis-dev): a build without it keeps the same functions, and
// Partition then says how to get METIS.
//
// Thread-safety: stateless; Partition may run on any thread.
#pragma once

#include <vector>

#include "core/status.h"
#include "topology/graph.h"

namespace murmur::sim::metis {

// Whether this build has METIS.
bool Available();

// Splits the nodes of `graph` (its arcs read as undirected edges) into
// `parts` parts, each within about 3% of n / parts nodes (METIS's balance
// target), that cut as few edges as METIS finds, with METIS's random choices seeded by `seed`: the
// same graph, parts and seed give the same answer. Returns the part of each
// node. An error when the build has no METIS or METIS fails.
// REQUIRES: parts >= 1.
Result<std::vector<int>> Partition(const topology::Graph& graph, int parts, std::uint64_t seed);

}  // namespace murmur::sim::metis
