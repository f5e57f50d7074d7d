#include "sim/vehicles/mobility.h"

#include <cmath>
#include <limits>

#include "core/check.h"

namespace murmur::sim {

double ContactSeconds(topology::Point2 a, topology::Point2 va, topology::Point2 b, topology::Point2 vb,
                      double range) {
  const double dx = b.x - a.x, dy = b.y - a.y;
  const double wx = vb.x - va.x, wy = vb.y - va.y;
  const double d2 = dx * dx + dy * dy, r2 = range * range;
  if (d2 > r2) return 0;
  const double w2 = wx * wx + wy * wy;
  if (w2 == 0) return std::numeric_limits<double>::infinity();
  // |d + w t|^2 = r^2: w2 t^2 + 2 (d.w) t + (d2 - r2) = 0; d2 <= r2, so the
  // larger root is >= 0. Written to avoid cancellation when d.w > 0.
  const double dw = dx * wx + dy * wy;
  const double disc = std::sqrt(std::max(0.0, dw * dw - w2 * (d2 - r2)));
  if (dw >= 0) return disc + dw > 0 ? (r2 - d2) / (dw + disc) : 0.0;  // on the rim, moving along it
  return (disc - dw) / w2;
}

Mobility::Mobility(NodeId nodes, RadioOptions radio) : radio_(radio) {
  MURMUR_CHECK(nodes > radio.rsus);
  positions_.resize(nodes);
  velocities_.resize(nodes);
  present_.assign(nodes, 1);
}

double Mobility::Range(NodeId u, NodeId v) const {
  const bool rsu = u >= vehicles() || v >= vehicles();
  return rsu ? radio_.radio_range * radio_.rsu_range_factor : radio_.radio_range;
}

topology::Graph ContactGraphOf(const std::vector<topology::Point2>& positions,
                               const std::vector<std::uint8_t>& present, const RadioOptions& radio) {
  const auto n = static_cast<NodeId>(positions.size()), cars = n - radio.rsus;
  // V2V among the vehicles on the road, then the RSU backhaul (a clique) and
  // vehicle-RSU links within the RSU's range.
  std::vector<topology::Point2> on_road;
  std::vector<NodeId> id_of;
  for (NodeId v = 0; v < cars; ++v) {
    if (present[v] == 0) continue;
    on_road.push_back(positions[v]);
    id_of.push_back(v);
  }
  std::vector<topology::Edge> edges;
  if (!on_road.empty()) {
    auto v2v = topology::RandomGeometric(on_road, radio.radio_range);
    MURMUR_CHECK(v2v.ok());
    for (const topology::Edge& e : v2v->Edges()) edges.push_back({id_of[e.u], id_of[e.v]});
  }
  const double rsu_range = radio.radio_range * radio.rsu_range_factor;
  for (NodeId r = cars; r < n; ++r) {
    for (NodeId q = r + 1; q < n; ++q) edges.push_back({r, q});
    for (NodeId v : id_of) {
      const double dx = positions[v].x - positions[r].x, dy = positions[v].y - positions[r].y;
      if (dx * dx + dy * dy <= rsu_range * rsu_range) edges.push_back({v, r});
    }
  }
  return topology::Graph::FromEdgesDedup(n, edges);
}

topology::Graph Mobility::ContactGraph() const { return ContactGraphOf(positions_, present_, radio_); }

double Mobility::PredictedContact(NodeId u, NodeId v) const {
  if (u >= vehicles() && v >= vehicles()) return std::numeric_limits<double>::infinity();
  if (!present(u) || !present(v)) return 0;
  return ContactSeconds(positions_[u], velocities_[u], positions_[v], velocities_[v], Range(u, v));
}

}  // namespace murmur::sim
