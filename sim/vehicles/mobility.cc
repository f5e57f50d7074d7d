#include "sim/vehicles/mobility.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/check.h"

namespace murmur::sim {

double RadioRate::At(double d, double range) const {
  return fast_bps * std::pow(slow_bps / fast_bps, std::clamp(d / range, 0.0, 1.0));
}

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
  return radio_.LinkRange(rsu);
}

double Mobility::Distance(NodeId u, NodeId v) const {
  return std::hypot(positions_[u].x - positions_[v].x, positions_[u].y - positions_[v].y);
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
  const double rsu_range = radio.LinkRange(true);
  for (NodeId r = cars; r < n; ++r) {
    for (NodeId q = r + 1; q < n; ++q) edges.push_back({r, q});
    for (NodeId v : id_of) {
      const double dx = positions[v].x - positions[r].x, dy = positions[v].y - positions[r].y;
      if (dx * dx + dy * dy <= rsu_range * rsu_range) edges.push_back({v, r});
    }
  }
  return topology::Graph::FromEdgesDedup(n, edges);
}

topology::Graph KeepLastingContacts(const topology::Graph& contacts,
                                    const std::vector<topology::Point2>& positions,
                                    const std::vector<topology::Point2>& velocities,
                                    const RadioOptions& radio, const ContactAware& aware) {
  const NodeId n = contacts.num_nodes(), cars = n - radio.rsus;
  const double rsu_range = radio.LinkRange(true);
  struct Candidate {
    NodeId peer;
    double contact;  // predicted seconds
    double rate;     // bits/s
  };
  std::vector<std::vector<NodeId>> kept(n);
  std::vector<Candidate> cands;
  for (NodeId u = 0; u < n; ++u) {
    cands.clear();
    for (NodeId v : contacts.Neighbors(u)) {
      if (u >= cars && v >= cars) continue;  // wired backhaul
      const double range = u >= cars || v >= cars ? rsu_range : radio.radio_range;
      const double d = std::hypot(positions[u].x - positions[v].x, positions[u].y - positions[v].y);
      const double up = std::min(aware.up_bps[u], aware.up_bps[v]);
      const double rate = aware.radio.on() ? std::min(up, aware.radio.At(std::min(d, range), range)) : up;
      cands.push_back(
          {v, ContactSeconds(positions[u], velocities[u], positions[v], velocities[v], range), rate});
    }
    std::stable_sort(cands.begin(), cands.end(),
                     [](const Candidate& a, const Candidate& b) { return a.contact > b.contact; });
    std::vector<const Candidate*> chosen;
    auto fits = [&](const Candidate& c, double k) {
      const double transfer = k * aware.message_bits / c.rate;
      return c.contact >= transfer && (aware.round_seconds <= 0 || transfer <= aware.round_seconds);
    };
    for (const Candidate& c : cands) {
      const double k = static_cast<double>(chosen.size() + 1);
      bool fit = fits(c, k);
      for (const Candidate* o : chosen) fit = fit && fits(*o, k);
      if (!fit) continue;
      chosen.push_back(&c);
    }
    for (const Candidate* c : chosen) kept[u].push_back(c->peer);
    std::sort(kept[u].begin(), kept[u].end());
  }
  std::vector<topology::Edge> edges;
  for (const topology::Edge& e : contacts.Edges()) {
    const bool wired = e.u >= cars && e.v >= cars;
    if (wired || (std::binary_search(kept[e.u].begin(), kept[e.u].end(), e.v) &&
                  std::binary_search(kept[e.v].begin(), kept[e.v].end(), e.u)))
      edges.push_back(e);
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
