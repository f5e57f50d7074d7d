// Pair costs measured on a running fleet, for the link-aware kinds
// (topology/link_aware.h): what `murmur peers --rtt-csv` records, each
// daemon's smoothed round trip to each peer from its membership probes and
// the throughput of each link timed from the models it carried
// (node/transport/transport.h), read back as the cost of moving a model
// between two nodes. This is how murmurd
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
#include <unordered_map>

#include "core/status.h"
#include "topology/link_aware.h"

namespace murmur::topology {

inline constexpr std::uint32_t kMaxMeasuredNodes = 1u << 16;
// What a pair measured in neither direction costs, in seconds: more than any
// measured pair, so that a graph takes it only when nothing else connects.
inline constexpr double kUnmeasuredSeconds = 1e4;

struct MeasuredLink {
  double rtt_ms = 0;  // the smoothed round trip
  double mbps = 0;    // the measured throughput; 0 when not measured
};

struct MeasuredLinks {
  std::uint32_t nodes = 0;
  // Keyed by u << 32 | v: what u measured to v (memory follows the rows, not
  // nodes squared).
  std::unordered_map<std::uint64_t, MeasuredLink> pairs;
  const MeasuredLink* Find(NodeId u, NodeId v) const {
    auto it = pairs.find(std::uint64_t{u} << 32 | v);
    return it == pairs.end() ? nullptr : &it->second;
  }
};

// Reads rows "from,to,rtt_ms[,mbps]" (blank lines, '#' comments and a header
// line starting "from," skipped). nodes is the larger of nodes_hint and 1 +
// the largest id. InvalidArgument naming the file and line for a malformed
// row, an id of kMaxMeasuredNodes or more, a node paired with itself, a
// round trip outside [0, 1e7] ms, or a throughput neither 0 (not measured)
// nor in [1e-6, 1e9] Mbit/s; NotFound when the file cannot be read. Memory
// follows the rows.
Result<MeasuredLinks> ReadMeasuredLinks(const std::string& path, std::uint32_t nodes_hint = 0);

// The seconds to send `bits` from u to v: half the round trip (one way), plus
// bits over the throughput where one was measured. A pair measured in one
// direction only takes that direction's values; one measured in neither
// costs kUnmeasuredSeconds.
PairCost MeasuredCost(const MeasuredLinks& links, double bits);

}  // namespace murmur::topology
