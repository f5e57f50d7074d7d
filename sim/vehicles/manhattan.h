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
// Every vehicle is always on the road; the contact graph is Mobility's.
//
// Thread-safety: none; Advance from the event loop.
#pragma once

#include <vector>

#include "core/rng.h"
#include "sim/vehicles/mobility.h"

namespace murmur::sim {

struct GridOptions {
  std::uint32_t blocks = 8;  // grid of blocks x blocks
  double block_m = 200;      // block length
  double speed = 14;         // mean speed, m/s (about 50 km/h)
};

class ManhattanMobility : public Mobility {
 public:
  // REQUIRES: nodes > radio.rsus, blocks >= 1.
  ManhattanMobility(std::uint32_t nodes, GridOptions grid, RadioOptions radio, std::uint64_t seed);

  void Advance(double t) override;

 private:
  struct Vehicle {
    int dir;         // 0 +x, 1 +y, 2 -x, 3 -y
    double speed;    // m/s
    double to_next;  // metres to the next intersection
  };
  void Turn(std::size_t v);

  void SetVelocity(std::size_t v);

  GridOptions options_;
  std::uint32_t vehicles_;
  std::vector<Vehicle> state_;
  std::vector<Rng> rngs_;
};

}  // namespace murmur::sim
