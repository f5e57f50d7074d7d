#include "sim/vehicles/sumo_mobility.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_set>

#include "core/check.h"

namespace murmur::sim {

namespace {

constexpr double kDegrees = 3.14159265358979323846 / 180;

// Junctions near a point: a hash of cells of side `range`, each point
// checking the 3 x 3 cells around it.
class JunctionIndex {
 public:
  JunctionIndex(std::span<const Junction> junctions, double range) : junctions_(junctions), range_(range) {
    for (std::uint32_t j = 0; j < junctions.size(); ++j)
      cells_[Key(Cell(junctions[j].x), Cell(junctions[j].y))].push_back(j);
  }
  // Adds 1 to load[j] for every junction j within range of (x, y).
  void Count(double x, double y, std::vector<std::uint64_t>& load) const {
    const std::int64_t cx = Cell(x), cy = Cell(y);
    for (std::int64_t i = cx - 1; i <= cx + 1; ++i) {
      for (std::int64_t k = cy - 1; k <= cy + 1; ++k) {
        auto it = cells_.find(Key(i, k));
        if (it == cells_.end()) continue;
        for (std::uint32_t j : it->second) {
          const double dx = junctions_[j].x - x, dy = junctions_[j].y - y;
          if (dx * dx + dy * dy <= range_ * range_) ++load[j];
        }
      }
    }
  }

 private:
  std::int64_t Cell(double v) const {
    return static_cast<std::int64_t>(std::clamp(std::floor(v / range_), -1e15, 1e15));
  }
  static std::uint64_t Key(std::int64_t x, std::int64_t y) {
    return static_cast<std::uint64_t>(x) * 0x9E3779B97F4A7C15ull ^ static_cast<std::uint64_t>(y);
  }
  std::span<const Junction> junctions_;
  double range_;
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> cells_;
};

// The `count` busiest junctions, spread at least `range` apart while possible.
std::vector<Junction> Busiest(std::span<const Junction> junctions, const std::vector<std::uint64_t>& load,
                              std::uint32_t count, double range) {
  std::vector<std::uint32_t> order(junctions.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return load[a] > load[b]; });
  std::vector<std::uint8_t> taken(junctions.size(), 0);
  std::vector<Junction> picked;
  auto far = [&](const Junction& j) {
    for (const Junction& p : picked)
      if ((p.x - j.x) * (p.x - j.x) + (p.y - j.y) * (p.y - j.y) < range * range) return false;
    return true;
  };
  for (std::uint32_t j : order) {
    if (picked.size() == count) break;
    if (far(junctions[j])) {
      picked.push_back(junctions[j]);
      taken[j] = 1;
    }
  }
  for (std::uint32_t j : order) {
    if (picked.size() == count) break;
    if (taken[j] == 0) picked.push_back(junctions[j]);
  }
  return picked;
}

topology::Point2 Velocity(const FcdVehicle& v) {
  if (!std::isfinite(v.speed) || !std::isfinite(v.angle)) return {std::nan(""), std::nan("")};
  return {v.speed * std::sin(v.angle * kDegrees), v.speed * std::cos(v.angle * kDegrees)};
}

}  // namespace

SeatAssigner::SeatAssigner(NodeId seats) {
  for (NodeId s = 0; s < seats; ++s) free_.push(s);
}

void SeatAssigner::Step(const FcdStep& step, std::vector<NodeId>* seat_of) {
  std::unordered_set<std::string_view> here;
  here.reserve(step.vehicles.size());
  for (const FcdVehicle& v : step.vehicles) here.insert(v.id);
  std::vector<NodeId> freed;  // seated again from the next timestep on
  for (auto it = on_road_.begin(); it != on_road_.end();) {
    if (here.count(it->first) != 0) {
      ++it;
      continue;
    }
    if (it->second != kNoSeat) freed.push_back(it->second);
    it = on_road_.erase(it);
  }
  seat_of->assign(step.vehicles.size(), kNoSeat);
  for (std::size_t i = 0; i < step.vehicles.size(); ++i) {
    auto [it, fresh] = on_road_.try_emplace(step.vehicles[i].id, kNoSeat);
    if (fresh) {
      ++trips_;
      if (free_.empty()) {
        ++unseated_;
      } else {
        it->second = free_.top();
        free_.pop();
      }
    }
    (*seat_of)[i] = it->second;
  }
  for (NodeId s : freed) free_.push(s);
}

Result<SumoScan> ScanSumo(const SumoSource& source, NodeId nodes, const RadioOptions& radio) {
  MURMUR_CHECK(nodes > radio.rsus);
  const NodeId seats = nodes - radio.rsus;
  const double rsu_range = radio.LinkRange(true);
  SumoScan scan;
  std::vector<Junction> junctions;
  if (radio.rsus > 0) {
    if (source.net.empty())
      return Status::InvalidArgument(
          "scenario field 'sumo_net': rsus > 0 needs the network, whose junctions they stand at");
    auto read = ReadJunctions(source.net);
    if (!read.ok()) return read.status().WithContext("scenario field 'sumo_net'");
    junctions = std::move(read).value();
    if (!source.rsu_junctions.empty()) {
      auto picked = PickJunctions(junctions, source.rsu_junctions);
      if (!picked.ok()) return picked.status().WithContext("scenario field 'rsu_junctions'");
      if (picked->size() != radio.rsus) {
        return Status::InvalidArgument("scenario field 'rsu_junctions': " + std::to_string(picked->size()) +
                                       " junctions for " + std::to_string(radio.rsus) + " rsus");
      }
      scan.rsus = std::move(picked).value();
    } else if (junctions.size() < radio.rsus) {
      return Status::InvalidArgument("scenario field 'rsus': " + std::to_string(radio.rsus) +
                                     " roadside units but " + source.net + " has " +
                                     std::to_string(junctions.size()) + " junctions");
    }
  }
  const bool busiest = radio.rsus > 0 && scan.rsus.empty();
  std::vector<std::uint64_t> load(busiest ? junctions.size() : 0, 0);
  const JunctionIndex index(busiest ? std::span<const Junction>(junctions) : std::span<const Junction>(),
                            rsu_range);

  auto reader = FcdReader::Open(source.fcd);
  if (!reader.ok()) return reader.status().WithContext("scenario field 'sumo_fcd'");
  SeatAssigner assigner(seats);
  // The seats on the road at virtual time 0 (trace time source.begin): nobody
  // before the trace's first timestep. Nodes start online, so those off the
  // road then go offline at 0; later changes happen at their timesteps.
  std::vector<std::uint8_t> on(seats, 0), now(seats);
  bool at_zero_told = false;
  auto tell_zero = [&] {
    for (NodeId s = 0; s < seats; ++s)
      if (on[s] == 0) scan.presence.push_back({0, s, false});
    at_zero_told = true;
  };
  std::vector<NodeId> seat_of;
  FcdStep step;
  double last_interval = 1;
  for (;;) {
    auto got = (*reader)->Next(&step);
    if (!got.ok()) return got.status().WithContext("scenario field 'sumo_fcd'");
    if (!*got) break;
    if (scan.timesteps == 0) {
      scan.begin = step.time;
    } else {
      last_interval = step.time - scan.end;
      scan.step = scan.timesteps == 1 ? last_interval : std::min(scan.step, last_interval);
    }
    scan.end = step.time;
    ++scan.timesteps;
    scan.most_at_once = std::max<std::uint64_t>(scan.most_at_once, step.vehicles.size());
    assigner.Step(step, &seat_of);
    std::fill(now.begin(), now.end(), 0);
    for (std::size_t i = 0; i < step.vehicles.size(); ++i) {
      if (seat_of[i] != kNoSeat) now[seat_of[i]] = 1;
      if (busiest && step.time >= source.begin) index.Count(step.vehicles[i].x, step.vehicles[i].y, load);
    }
    const double t = step.time - source.begin;
    if (t > 0 && !at_zero_told) tell_zero();
    for (NodeId s = 0; s < seats; ++s) {
      if (t > 0 && now[s] != on[s]) scan.presence.push_back({t, s, now[s] != 0});
      on[s] = now[s];
    }
  }
  if (scan.timesteps == 0)
    return Status::InvalidArgument("scenario field 'sumo_fcd': " + source.fcd + " has no timestep");
  if (scan.timesteps == 1) scan.step = last_interval;
  if (scan.end - source.begin < 0) {
    return Status::InvalidArgument("scenario field 'sumo_begin': " + std::to_string(source.begin) +
                                   " s is after " + source.fcd + "'s last timestep (" +
                                   std::to_string(scan.end) + " s)");
  }
  if (!at_zero_told) tell_zero();
  for (NodeId s = 0; s < seats; ++s)  // the trace's end: every vehicle leaves a step later
    if (on[s] != 0) scan.presence.push_back({scan.end - source.begin + last_interval, s, false});
  scan.trips = assigner.trips();
  scan.unseated = assigner.unseated();
  if (busiest) scan.rsus = Busiest(junctions, load, radio.rsus, rsu_range);
  return scan;
}

SumoMobility::SumoMobility(NodeId nodes, const RadioOptions& radio, std::unique_ptr<FcdReader> reader)
    : Mobility(nodes, radio), reader_(std::move(reader)), seats_(nodes - radio.rsus) {
  for (Snapshot* s : {&cur_, &next_}) {
    s->pos.resize(vehicles());
    s->vel.resize(vehicles());
    s->present.assign(vehicles(), 0);
  }
  cur_.time = -std::numeric_limits<double>::infinity();
  std::fill(present_.begin(), present_.begin() + vehicles(), 0);
}

Result<std::unique_ptr<SumoMobility>> SumoMobility::Open(const SumoSource& source, NodeId nodes,
                                                         const RadioOptions& radio, const SumoScan& scan) {
  MURMUR_CHECK(scan.rsus.size() == radio.rsus);
  auto reader = FcdReader::Open(source.fcd);
  if (!reader.ok()) return reader.status().WithContext("scenario field 'sumo_fcd'");
  std::unique_ptr<SumoMobility> m(new SumoMobility(nodes, radio, std::move(reader).value()));
  m->begin_ = source.begin;
  for (std::uint32_t r = 0; r < radio.rsus; ++r)
    m->positions_[m->vehicles() + r] = {scan.rsus[r].x, scan.rsus[r].y};
  m->Shift();
  m->Advance(0);
  return m;
}

void SumoMobility::Shift() {
  if (started_) {
    std::swap(cur_, next_);
  }
  started_ = true;
  auto got = reader_->Next(&step_);
  MURMUR_CHECK_MSG(got.ok(),
                   "the SUMO trace no longer reads as it did before the run: " + got.status().ToString());
  std::fill(next_.present.begin(), next_.present.end(), 0);
  if (!*got) {
    ended_ = true;
    next_.time = std::numeric_limits<double>::infinity();
    return;
  }
  if (std::isfinite(cur_.time)) last_step_ = step_.time - begin_ - cur_.time;
  next_.time = step_.time - begin_;
  seats_.Step(step_, &seat_of_);
  for (std::size_t i = 0; i < step_.vehicles.size(); ++i) {
    const NodeId s = seat_of_[i];
    if (s == kNoSeat) continue;
    const FcdVehicle& v = step_.vehicles[i];
    next_.present[s] = 1;
    next_.pos[s] = {v.x, v.y};
    topology::Point2 vel = Velocity(v);
    if (std::isnan(vel.x)) {  // no speed or angle in the trace: the last step's displacement
      vel = {0, 0};
      if (cur_.present[s] != 0 && std::isfinite(cur_.time)) {
        const double dt = next_.time - cur_.time;
        vel = {(v.x - cur_.pos[s].x) / dt, (v.y - cur_.pos[s].y) / dt};
      }
    }
    next_.vel[s] = vel;
  }
}

void SumoMobility::Advance(double t) {
  MURMUR_CHECK(t >= time_);
  while (!ended_ && next_.time <= t) Shift();
  // After the last timestep every vehicle leaves one step later (as ScanSumo says).
  const double interval = last_step_ > 0 ? last_step_ : 1;
  const bool gone = ended_ && t >= cur_.time + interval;
  over_ = gone;
  for (NodeId s = 0; s < vehicles(); ++s) {
    present_[s] = !gone && cur_.present[s] != 0 && t >= cur_.time;
    if (present_[s] == 0) continue;
    velocities_[s] = cur_.vel[s];
    if (next_.present[s] != 0 && std::isfinite(next_.time)) {
      const double f = (t - cur_.time) / (next_.time - cur_.time);
      positions_[s] = {cur_.pos[s].x + f * (next_.pos[s].x - cur_.pos[s].x),
                       cur_.pos[s].y + f * (next_.pos[s].y - cur_.pos[s].y)};
    } else {
      positions_[s] = cur_.pos[s];
    }
  }
  time_ = t;
}

topology::Graph RoundContacts::Graph(const Snap& snap) const {
  topology::Graph g = ContactGraphOf(snap.pos, snap.present, mobility_->radio());
  if (!aware_) return g;
  return KeepLastingContacts(g, snap.pos, snap.vel, mobility_->radio(), *aware_);
}

topology::Graph RoundContacts::At(std::uint64_t round) {
  while (rounds_.size() <= round && (rounds_.empty() || !mobility_->over())) {
    mobility_->Advance(std::max(mobility_->time(), static_cast<double>(rounds_.size()) * interval_));
    rounds_.push_back({mobility_->positions(), mobility_->velocities(), mobility_->presence()});
    if (observer_) {
      const Snap& snap = rounds_.back();
      const topology::Graph g = ContactGraphOf(snap.pos, snap.present, mobility_->radio());
      const topology::Graph used = aware_ ? Graph(snap) : g;
      Counts c;
      c.round = rounds_.size() - 1;
      c.time = mobility_->time();
      const NodeId cars = mobility_->vehicles();
      for (NodeId v = 0; v < cars; ++v) {
        c.on_road += snap.present[v];
        for (NodeId w : g.Neighbors(v)) {
          if (w >= cars) {
            ++c.v2rsu;
          } else if (w > v) {
            ++c.v2v;
          }
        }
        for (NodeId w : used.Neighbors(v)) c.kept += w >= cars || w > v;
      }
      c.contacts = &g;
      c.positions = &snap.pos;
      c.present = &snap.present;
      observer_(c);
    }
  }
  return Graph(rounds_[std::min<std::uint64_t>(round, rounds_.size() - 1)]);
}

}  // namespace murmur::sim
