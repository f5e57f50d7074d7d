// ManhattanMobility: vehicles driving on a road grid (the Manhattan mobility
// model of Bai, Sadagopan and Helmy, INFOCOM 2003, as used for IoV studies).
//
// Roads run along x = k * block and y = k * block for k = 0..blocks. Each
// vehicle drives at its own constant speed (the mean times U(0.5, 1.5)); at
// every intersection it goes straight with probability 1/2 and turns left or
// right with 1/4 each, turning back only at the grid's edge. Motion is
// computed exactly, segment by segment, from each vehicle's own stream, so
// positions at time t do not depend on how often they were asked for.
// Roadside units (RSUs) stand at fixed intersections spread over the grid.
//
// The contact graph at time t links two nodes within radio range (a random
// geometric graph) and RSUs to each other (wired backhaul); gossip rounds use
// it as their topology.
//
// Thread-safety: none; Advance from the event loop.
#pragma once

#include <vector>

#include "core/rng.h"
#include "core/status.h"
#include "topology/generators.h"
#include "topology/graph.h"

namespace murmur::sim {

struct MobilityOptions {
  std::uint32_t blocks = 8;       // grid of blocks x blocks
  double block_m = 200;           // block length
  double speed = 14;              // mean speed, m/s (about 50 km/h)
  double radio_range = 300;       // V2V range, m
  std::uint32_t rsus = 0;         // the last `rsus` nodes are roadside units
  double rsu_range_factor = 1.5;  // RSU radio range = this x radio_range
};

class ManhattanMobility {
 public:
  // REQUIRES: nodes > options.rsus, blocks >= 1.
  ManhattanMobility(std::uint32_t nodes, MobilityOptions options, std::uint64_t seed);

  // Moves every vehicle to time t (seconds). REQUIRES: t >= the last time asked.
  void Advance(double t);
  const std::vector<topology::Point2>& positions() const { return positions_; }
  double time() const { return time_; }

  // The contact graph at the current time.
  topology::Graph ContactGraph() const;

 private:
  struct Vehicle {
    int dir;         // 0 +x, 1 +y, 2 -x, 3 -y
    double speed;    // m/s
    double to_next;  // metres to the next intersection
  };
  void Turn(std::size_t v);

  MobilityOptions options_;
  std::uint32_t vehicles_;
  std::vector<topology::Point2> positions_;
  std::vector<Vehicle> state_;
  std::vector<Rng> rngs_;
  double time_ = 0;
};

}  // namespace murmur::sim
