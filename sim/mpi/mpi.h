// The simulator's ranks as MPI processes: `mpirun -np R murmur sim ...` runs R
// copies of murmur, and each one asks here for its RankGroup (sim/ranks/ranks.h).
//
// This folder is the only place that sees MPI (cmake/MurmurMpi.cmake): a build
// without it keeps the same functions, and MakeMpiRanks then says how to get
// MPI.
//
// Thread-safety: call from the main thread; the RankGroup belongs to it.
#pragma once

#include <memory>

#include "core/status.h"
#include "sim/ranks/ranks.h"

namespace murmur::sim::mpi {

// How many processes the launcher (mpirun, mpiexec) says this job has,
// from its environment; 0 when this process was not started by one.
int LaunchedRanks();
// This process's rank as the launcher says (0 when not started by one), known
// before MPI starts: only rank 0 should print a usage error.
int LaunchedRank();

// Whether this build talks MPI.
bool Available();

// Initializes MPI and returns this process's place among the job's ranks;
// MPI is finalized when the group is destroyed. An error when the build has
// no MPI, or MPI does not start.
Result<std::unique_ptr<RankGroup>> MakeMpiRanks();

}  // namespace murmur::sim::mpi
