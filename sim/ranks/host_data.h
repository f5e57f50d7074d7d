// LoadOncePerHost: a dataset read once per host, not once per rank.
//
// The ranks of a partitioned run (sim/ranks/ranks.h) each need the whole dataset:
// any node may be placed on any rank, and every rank evaluates. Ranks on one
// machine share one copy: the host's first rank loads it, copies the sample
// values into a POSIX shared memory object (shm_open, /dev/shm) and hands the
// others its name with the small rest (name, shape, classes, labels); every
// rank of the host, the first included, then reads the samples through a
// read-only mapping (ml::SampleValues views), and the object is unlinked once
// all have mapped it, so nothing outlives the run. Ranks are on one host when
// their host name and kernel boot id agree.
//
// Where /dev/shm cannot hold the samples (posix_fallocate refuses: a small
// container /dev/shm) or a rank cannot map them, that rank loads its own copy
// as before and the first rank says so on stderr: the run is the same, only
// its memory is not.
//
// Thread-safety: every rank calls it, from the thread that drives it.
#pragma once

#include <functional>

#include "core/status.h"
#include "ml/dataset.h"
#include "sim/ranks/ranks.h"

namespace murmur::sim {

// `load()` on the first rank of each host; the others get the same data, the
// samples in memory the host shares. An error from `load` is returned on the
// rank where it happened, FailedOnAnotherRank (sim/ranks/ranks.h) on the others.
// Every rank must call it. One rank: `load()`.
Result<ml::TrainTest> LoadOncePerHost(const std::function<Result<ml::TrainTest>()>& load, RankGroup& ranks);

}  // namespace murmur::sim
