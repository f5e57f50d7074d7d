// A build without METIS (cmake/MurmurMetis.cmake).
#include "sim/metis/metis.h"

namespace murmur::sim::metis {

bool Available() { return false; }

Result<std::vector<int>> Partition(const topology::Graph&, int, std::uint64_t) {
  return Status::FailedPrecondition(
      "this murmur was built without METIS, so it cannot place nodes by graph partition: install "
      "libmetis-dev and build again (cmake -DMURMUR_METIS=ON), or use placement: blocks");
}

}  // namespace murmur::sim::metis
