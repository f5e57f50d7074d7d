// Device profiles: how fast a simulated node computes and communicates.
//
// A profile gives compute speed (FLOP/s actually achieved on training),
// uplink and downlink bandwidth, one-way access latency, and long-run
// availability (the fraction of time online, used by the churn model).
// Named distributions draw a profile per node from ranges typical of each
// device class; a CSV trace gives measured profiles node by node.
//
// Thread-safety: values and pure functions.
#pragma once

#include <string>
#include <vector>

#include "core/env.h"
#include "core/status.h"

namespace murmur::sim {

struct DeviceProfile {
  double flops_per_s = 10e9;     // sustained training throughput
  double up_bps = 100e6;         // uplink bandwidth, bits per second
  double down_bps = 100e6;       // downlink bandwidth, bits per second
  Nanos latency{5'000'000};      // one-way access latency (a link adds both ends')
  double availability = 1.0;     // long-run fraction of time online, in (0, 1]
  std::string kind = "uniform";  // the distribution or trace it came from
};

// Draws `n` profiles from a named distribution, deterministically from
// (seed, node). Names: "uniform" (all equal to the defaults above), "iot",
// "phone", "vehicle", "edge-server", or a mix "phone:0.7,iot:0.3" whose
// weights, normalised to sum to 1, are the shares of nodes of each kind.
Result<std::vector<DeviceProfile>> MakeDeviceProfiles(const std::string& spec, std::size_t n,
                                                      std::uint64_t seed);

// Reads a CSV trace with header "node,gflops,up_mbps,down_mbps,latency_ms,availability"
// and one row per node 0..n-1 (any order, each node once). Errors name the
// file and line.
Result<std::vector<DeviceProfile>> ReadDeviceTrace(const std::string& path, std::size_t n);

// The device classes "iot", "phone", "vehicle", "edge-server", for --help texts.
const std::vector<std::string>& DeviceClassNames();

}  // namespace murmur::sim
