#include <algorithm>
#include <cstdlib>
#include <initializer_list>

#include "sim/mpi/mpi.h"

namespace murmur::sim::mpi {

namespace {
// The first of `names` set to a number in [0, 2^24), or -1.
int FromEnvironment(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') continue;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (*end == '\0' && n >= 0 && n < (1L << 24)) return static_cast<int>(n);
  }
  return -1;
}
}  // namespace

// Open MPI's mpirun, then the PMI variables of MPICH's hydra.
int LaunchedRanks() { return std::max(0, FromEnvironment({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})); }

int LaunchedRank() { return std::max(0, FromEnvironment({"OMPI_COMM_WORLD_RANK", "PMI_RANK"})); }

}  // namespace murmur::sim::mpi
