// A build without MPI (cmake/MurmurMpi.cmake).
#include "sim/mpi/mpi.h"

namespace murmur::sim::mpi {

bool Available() { return false; }

Result<std::unique_ptr<RankGroup>> MakeMpiRanks() {
  return Status::FailedPrecondition(
      "this murmur was built without MPI, so it cannot spread a simulation over ranks: install "
      "libopenmpi-dev and openmpi-bin and build again (cmake -DMURMUR_MPI=ON), or run murmur sim without "
      "mpirun");
}

}  // namespace murmur::sim::mpi
