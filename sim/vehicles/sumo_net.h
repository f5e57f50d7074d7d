// SUMO road networks (.net.xml, from netconvert or netgenerate): the
// junctions, where roadside units stand. Streamed like the FCD trace
// (sim/vehicles/xml_stream.h); only the top-level <junction> elements are
// kept, less SUMO's internal ones (type="internal", the nodes inside a
// junction). Coordinates are the network's, the same as the FCD trace's;
// one beyond 1e9 m is refused, as are more than 2^24 junctions.
//
// Thread-safety: none needed (a function).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace murmur::sim {

struct Junction {
  std::string id;
  std::string type;  // priority, traffic_light, dead_end, ...
  double x = 0, y = 0;
};

// The junctions of a SUMO network file, in the file's order. Errors name the
// file and line; a network with no junction is refused.
Result<std::vector<Junction>> ReadJunctions(const std::string& path);

// The junctions named in `ids`, in that order: ids separated by commas, or
// "file:PATH", a file of ids separated by commas or line breaks (# starts a
// comment). An id the network lacks, or a file that cannot be read, is an
// error naming it.
Result<std::vector<Junction>> PickJunctions(std::span<const Junction> all, const std::string& ids);

}  // namespace murmur::sim
