// LinkModel: what the path between two nodes adds to their devices' access
// links, for scenarios whose links differ pair by pair (sites joined by a
// slow WAN, radios whose rate falls with distance, a measured table).
//
// The simulator (sim/net/simulator.h) sends a message over the sender's uplink at
// min(up_bps, Bps(a, b)): a slow path holds the sender's uplink for the whole
// transfer, as a radio's airtime or a socket whose buffer drains at the
// path's rate does. The message then takes both devices' access latency plus
// Latency(a, b), and the receiver's downlink as before. Both are pure
// functions of the pair (for RadioLinks, sim/net/radio_links.h: of the pair and
// the time), so partitioned runs give the same bits.
//
// Kinds (scenario field `links`):
//   uniform                       no path limits (the default; MakeLinkModel gives null)
//   sites:S:LAN:WAN[:MS]          nodes in S sites of equal size (an assignment
//                                 drawn from the seed, not by id); LAN Mbit/s
//                                 inside a site, WAN Mbit/s and MS ms more
//                                 one-way latency between sites
//   plane:FAST:SLOW[:MS]          nodes at uniform points of the unit square
//                                 (drawn from the seed); rate FAST Mbit/s at
//                                 distance 0 falling geometrically to SLOW at
//                                 the diagonal, FAST (SLOW / FAST)^(d / sqrt 2);
//                                 MS ms more latency at the diagonal, linear in d
//   trace:FILE.csv                rows "a,b,mbps,latency_ms" (a header "a,..."
//                                 and # comments allowed), one per unordered
//                                 pair; pairs not listed are unlimited
// Nodes past the n the model was made for (Byzantine nodes attached to a
// graph) have unlimited paths: only their devices limit them.
//
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/env.h"
#include "core/status.h"
#include "sim/net/device.h"

namespace murmur::sim {

class LinkModel {
 public:
  virtual ~LinkModel() = default;
  // Bits per second the path a -> b carries (infinity: no limit of its own).
  virtual double Bps(NodeId a, NodeId b) const = 0;
  // One-way latency the path adds to both ends' access latency.
  virtual Nanos Latency(NodeId a, NodeId b) const = 0;
  // The rate at virtual time t, for paths that change (RadioLinks: vehicles
  // driving); the simulator asks at non-decreasing t, from one rank's event
  // loop. The default is Bps(a, b).
  virtual double BpsAt(NodeId a, NodeId b, Nanos t) const {
    (void)t;
    return Bps(a, b);
  }
  // Whether the path exists at time t: a message whose path is down when it
  // is sent or when its last byte comes in is lost (a radio contact that
  // ended mid-transfer). The default: always.
  virtual bool Up(NodeId a, NodeId b, Nanos t) const {
    (void)a;
    (void)b;
    (void)t;
    return true;
  }
  // "4 sites, 100 Mbit/s inside, 1 Mbit/s and 20 ms between"
  virtual std::string Describe() const = 0;
  // sites: each node's site, and how many there are; others: empty and 0.
  virtual std::vector<std::uint32_t> Sites() const { return {}; }
  virtual std::uint32_t num_sites() const { return 0; }
};

// The model the `links` text names, over n nodes; null for "uniform".
// InvalidArgument (or NotFound for a trace) names the field and the fault.
Result<std::unique_ptr<LinkModel>> MakeLinkModel(const std::string& spec, NodeId n, std::uint64_t seed);

// Seconds to move `bits` from a to b over the devices and the path (the
// uplink at min(up, path), the downlink, both latencies and the path's):
// what link-aware topologies minimize. `links` may be null.
double PathSeconds(const LinkModel* links, const std::vector<DeviceProfile>& devices, NodeId a, NodeId b,
                   double bits);

}  // namespace murmur::sim
