#include "sim/vehicles/manhattan.h"

#include <cmath>

#include "core/check.h"

namespace murmur::sim {

namespace {
constexpr double kDx[4] = {1, 0, -1, 0};
constexpr double kDy[4] = {0, 1, 0, -1};
}  // namespace

ManhattanMobility::ManhattanMobility(std::uint32_t nodes, GridOptions grid, RadioOptions radio,
                                     std::uint64_t seed)
    : Mobility(nodes, radio), options_(grid), vehicles_(nodes - radio.rsus) {
  MURMUR_CHECK(grid.blocks >= 1);
  state_.resize(vehicles_);
  const double b = options_.block_m;
  for (std::uint32_t v = 0; v < vehicles_; ++v) {
    rngs_.emplace_back(seed, v, RngPurpose::kMobility);
    Rng& rng = rngs_.back();
    // Start at a random intersection, heading a random way, part way along the block.
    auto ix = static_cast<double>(rng.UniformInt(options_.blocks + 1));
    auto iy = static_cast<double>(rng.UniformInt(options_.blocks + 1));
    positions_[v] = {ix * b, iy * b};
    Vehicle& s = state_[v];
    s.speed = options_.speed * rng.Uniform(0.5, 1.5);
    s.dir = static_cast<int>(rng.UniformInt(4));
    s.to_next = 0;
    Turn(v);  // makes the heading valid at the grid's edge
    double part = rng.Uniform() * b;
    positions_[v].x += kDx[s.dir] * part;
    positions_[v].y += kDy[s.dir] * part;
    s.to_next = b - part;
    SetVelocity(v);
  }
  // RSUs at intersections on an even lattice.
  for (std::uint32_t r = 0; r < radio_.rsus; ++r) {
    auto side = static_cast<std::uint32_t>(std::ceil(std::sqrt(static_cast<double>(radio_.rsus))));
    double step = static_cast<double>(options_.blocks) / (side + 1);
    double gx = std::round((r % side + 1) * step), gy = std::round((r / side + 1) * step);
    positions_[vehicles_ + r] = {gx * b, gy * b};
  }
}

// At an intersection: straight 1/2, left 1/4, right 1/4; no heading that
// leaves the grid (a vehicle at a corner may have to turn back).
void ManhattanMobility::Turn(std::size_t v) {
  Vehicle& s = state_[v];
  const double max = options_.blocks * options_.block_m;
  auto allowed = [&](int d) {
    double nx = positions_[v].x + kDx[d] * options_.block_m * 0.5;
    double ny = positions_[v].y + kDy[d] * options_.block_m * 0.5;
    return nx >= 0 && ny >= 0 && nx <= max && ny <= max;
  };
  Rng& rng = rngs_[v];
  double u = rng.Uniform();
  int choice = u < 0.5 ? s.dir : (u < 0.75 ? (s.dir + 1) % 4 : (s.dir + 3) % 4);
  if (!allowed(choice)) {
    int options[3] = {s.dir, (s.dir + 1) % 4, (s.dir + 3) % 4};
    choice = -1;
    for (int d : options) {
      if (allowed(d)) {
        choice = d;
        break;
      }
    }
    if (choice < 0) choice = (s.dir + 2) % 4;  // dead end: turn back
  }
  s.dir = choice;
  s.to_next = options_.block_m;
}

void ManhattanMobility::Advance(double t) {
  MURMUR_CHECK(t >= time_);
  const double dt = t - time_;
  for (std::uint32_t v = 0; v < vehicles_; ++v) {
    Vehicle& s = state_[v];
    double left = s.speed * dt;
    while (left >= s.to_next) {
      positions_[v].x += kDx[s.dir] * s.to_next;
      positions_[v].y += kDy[s.dir] * s.to_next;
      left -= s.to_next;
      // Snap to the intersection to keep rounding from drifting off the road.
      positions_[v].x = std::round(positions_[v].x / options_.block_m) * options_.block_m;
      positions_[v].y = std::round(positions_[v].y / options_.block_m) * options_.block_m;
      Turn(v);
      SetVelocity(v);
    }
    positions_[v].x += kDx[s.dir] * left;
    positions_[v].y += kDy[s.dir] * left;
    s.to_next -= left;
  }
  time_ = t;
}

void ManhattanMobility::SetVelocity(std::size_t v) {
  velocities_[v] = {kDx[state_[v].dir] * state_[v].speed, kDy[state_[v].dir] * state_[v].speed};
}

}  // namespace murmur::sim
