// ThreadRanks: the ranks of a partitioned simulation as threads of one
// process, for tests: the same collectives as MPI over shared memory, so a
// partitioned run is checked without MPI (and under the sanitizers).
//
// Thread-safety: each returned RankGroup belongs to one thread; the group's
// shared state is synchronized inside.
#pragma once

#include <memory>
#include <vector>

#include "sim/ranks/ranks.h"

namespace murmur::sim {

// `n` ranks that talk to each other; hand element r to the thread of rank r.
// REQUIRES: n >= 1.
std::vector<std::unique_ptr<RankGroup>> MakeThreadRanks(int n);

}  // namespace murmur::sim
