// Pair costs measured on a running fleet, for the link-aware kinds
// (topology/link_aware.h): what `murmur peers --rtt-csv` records, each
// daemon's smoothed round trip to each peer from its membership probes, read
// back as the cost of moving a model between two nodes. This is how murmurd
// jobs get neighbours and ring orders chosen from measurements:
//   murmur peers --rtt-csv rtt.csv
//   murmur topology link-aware:4 --measured rtt.csv --export edges --out g.txt
// then the job's topology "file:g.txt" (docs/topology.md, "Measured links").
//
// Thread-safety: MeasuredLinks is a value; MeasuredCost's function reads it
// (keep it alive and unchanged while the function is used).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "topology/link_aware.h"

namespace murmur::topology {

inline constexpr std::uint32_t kMaxMeasuredNodes = 1u << 16;
// What a pair measured in neither direction costs, in seconds: more than any
// measured pair, so that a graph takes it only when nothing else connects.
inline constexpr double kUnmeasuredSeconds = 1e4;

struct MeasuredLinks {
  std::uint32_t nodes = 0;
  // Row-major nodes x nodes: u's smoothed round trip to v in ms and its
  // measured throughput in Mbit/s; 0 where u has not measured v.
  std::vector<double> rtt_ms;
  std::vector<double> mbps;
};

// Reads rows "from,to,rtt_ms[,mbps]" (blank lines, '#' comments and a header
// line starting "from," skipped). nodes is the larger of nodes_hint and 1 +
// the largest id. InvalidArgument naming the file and line for a malformed
// row, an id of kMaxMeasuredNodes or more, a node paired with itself, or a
// round trip or throughput that is negative or not finite; NotFound when
// the file cannot be read.
Result<MeasuredLinks> ReadMeasuredLinks(const std::string& path, std::uint32_t nodes_hint = 0);

// The seconds to send `bits` from u to v: half the round trip (one way), plus
// bits over the throughput where one was measured. A pair measured in one
// direction only takes that direction's values; one measured in neither
// costs kUnmeasuredSeconds.
PairCost MeasuredCost(const MeasuredLinks& links, double bits);

}  // namespace murmur::topology
