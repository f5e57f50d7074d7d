// Mobility: where the vehicles of a `vehicles` scenario are at a virtual
// time, and the contact graph that follows. Two sources implement it: the
// Manhattan grid (sim/vehicles/manhattan.h) and a SUMO trace
// (sim/vehicles/sumo_mobility.h). Nodes 0 .. vehicles-1 are vehicles; the
// last `rsus` nodes are roadside units, fixed and wired to each other.
//
// The contact graph at the current time links two present vehicles within
// `radio_range` of each other (a random geometric graph), every pair of RSUs
// (the backhaul), and a present vehicle to each RSU within
// `rsu_range_factor` x `radio_range`. A vehicle that is not present (not on
// the road now) has no links.
//
// ContactSeconds predicts how long a contact lasts from what each vehicle
// knows now, its position and velocity (no look at the future): the time
// until straight-line motion at today's velocities takes the pair out of
// range, a closed form (the positive root of |d + w t| = R, d and w the
// relative position and velocity), infinity for a pair that does not move
// apart, 0 for a pair out of range now.
//
// Thread-safety: none; Advance from the event loop.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/env.h"
#include "topology/generators.h"
#include "topology/graph.h"

namespace murmur::sim {

struct RadioOptions {
  double radio_range = 300;       // V2V range, m
  std::uint32_t rsus = 0;         // the last `rsus` nodes are roadside units
  double rsu_range_factor = 1.5;  // RSU radio range = this x radio_range
  // A link's range: the RSU's when one end is an RSU, else radio_range.
  double LinkRange(bool rsu_end) const { return rsu_end ? radio_range * rsu_range_factor : radio_range; }
};

// A radio's rate over distance (scenario field radio_rate, FAST:SLOW):
// fast_bps at distance 0 falling geometrically to slow_bps at the link's
// range, fast (slow / fast)^(d / range), and no link beyond the range.
// fast_bps 0: no radio model (the devices' rates alone).
struct RadioRate {
  double fast_bps = 0, slow_bps = 0;
  bool on() const { return fast_bps > 0; }
  // REQUIRES: on(), 0 <= d <= range.
  double At(double d, double range) const;
};

// Seconds until two points at positions a, b moving at velocities va, vb
// (m/s) are more than `range` apart, if they keep their velocities: 0 when
// they already are, infinity when they never will be.
double ContactSeconds(topology::Point2 a, topology::Point2 va, topology::Point2 b, topology::Point2 vb,
                      double range);

// The contact graph of vehicles at `positions` (nodes 0 .. positions.size() -
// radio.rsus - 1, present[v] != 0 on the road) and RSUs after them.
topology::Graph ContactGraphOf(const std::vector<topology::Point2>& positions,
                               const std::vector<std::uint8_t>& present, const RadioOptions& radio);

// Contact-aware scheduling (scenario field contact_aware): a node sends a
// round's message to each neighbour it keeps, and its k transfers share its
// uplink, so each needs about k x message_bits / rate; a contact predicted
// (ContactSeconds, from positions and velocities now) to end sooner would
// lose its transfer, and transfers longer than a round (round_seconds, the
// round clock) would queue the next round's behind them until every contact
// is stale. Each node takes its neighbours longest predicted contact first
// and keeps one while every kept transfer, this one's included, fits both
// its contact and the round; a link stays when both ends keep it. RSU-RSU
// links (wired) always stay and count for nobody's k.
struct ContactAware {
  double message_bits = 0;     // one round's message
  double round_seconds = 0;    // a round's length (0: no bound)
  RadioRate radio;             // the pair's radio rate, when on()
  std::vector<double> up_bps;  // and no more than the slower of the two ends' uplinks
};
topology::Graph KeepLastingContacts(const topology::Graph& contacts,
                                    const std::vector<topology::Point2>& positions,
                                    const std::vector<topology::Point2>& velocities,
                                    const RadioOptions& radio, const ContactAware& aware);

class Mobility {
 public:
  Mobility(NodeId nodes, RadioOptions radio);
  virtual ~Mobility() = default;

  // Moves every vehicle to time t (seconds). REQUIRES: t >= time().
  virtual void Advance(double t) = 0;

  double time() const { return time_; }
  NodeId nodes() const { return static_cast<NodeId>(positions_.size()); }
  NodeId vehicles() const { return nodes() - radio_.rsus; }
  const RadioOptions& radio() const { return radio_; }
  const std::vector<topology::Point2>& positions() const { return positions_; }
  const std::vector<topology::Point2>& velocities() const { return velocities_; }
  const std::vector<std::uint8_t>& presence() const { return present_; }
  // Whether node v is on the road now (RSUs always are).
  bool present(NodeId v) const { return present_[v] != 0; }
  // The range of a link between u and v: radio_range, or the RSU's range.
  double Range(NodeId u, NodeId v) const;
  // The distance between u and v now.
  double Distance(NodeId u, NodeId v) const;

  // The contact graph at the current time.
  topology::Graph ContactGraph() const;
  // The predicted remaining contact of u and v now (ContactSeconds at the
  // pair's range); infinity between two RSUs (wired).
  double PredictedContact(NodeId u, NodeId v) const;

 protected:
  RadioOptions radio_;
  std::vector<topology::Point2> positions_;
  std::vector<topology::Point2> velocities_;
  std::vector<std::uint8_t> present_;
  double time_ = 0;
};

}  // namespace murmur::sim
