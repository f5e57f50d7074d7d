#include "topology/report.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "topology/generators.h"
#include "topology/link_aware.h"

namespace murmur::topology {

namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string KindList() {
  std::string s;
  for (const std::string& k : TopologyKinds()) s += (s.empty() ? "" : ", ") + k;
  return s;
}

}  // namespace

Status CheckTopologySpec(const TopologySpec& spec) {
  const auto& kinds = TopologyKinds();
  const bool link_kind = IsLinkAwareKind(spec.kind);
  if (link_kind && !spec.link_cost)
    return Status::InvalidArgument(
        spec.kind +
        " is chosen from link costs, and none were given (murmur topology: --links "
        "or --devices; the simulator: its scenario field links)");
  if (!link_kind && std::find(kinds.begin(), kinds.end(), spec.kind) == kinds.end())
    return Status::InvalidArgument("unknown topology '" + spec.kind + "' (one of: " + KindList() + ")");
  if (spec.kind == "file" && spec.file.empty()) return Status::InvalidArgument("kind 'file' needs a file");
  if (spec.kind == "edges" && spec.edges.empty())
    return Status::InvalidArgument(
        "kind 'edges' needs its edges (murmur topology --edges \"U V;U V\", a job's edges:U V;U V)");
  if (spec.kind != "file" && spec.kind != "edges" && spec.nodes == 0)
    return Status::InvalidArgument("nodes must be at least 1");
  if (!(spec.prob >= 0 && spec.prob <= 1))
    return Status::InvalidArgument("prob must be in [0, 1], got " + std::to_string(spec.prob));
  if (!(spec.beta >= 0 && spec.beta <= 1))
    return Status::InvalidArgument("beta must be in [0, 1], got " + std::to_string(spec.beta));
  if (!(spec.radius >= 0) || !std::isfinite(spec.radius))
    return Status::InvalidArgument("radius must be positive, got " + std::to_string(spec.radius));
  if (spec.weights_given && (spec.kind == "one-peer-exponential" || spec.kind == "random-matching"))
    return Status::InvalidArgument("weights cannot apply to '" + spec.kind +
                                   "', whose rounds pair each node with one peer at weight 1/2");
  return Status::Ok();
}

Result<TopologyReport> DescribeSchedule(Schedule& schedule, std::uint64_t rounds) {
  TopologyReport r;
  const Graph& g = schedule.GraphAt(0);
  r.nodes = g.num_nodes();
  r.edges = g.num_edges();
  r.directed = g.directed();
  r.degree = ComputeDegreeStats(g);
  r.connected = IsConnected(g);
  r.diameter = ComputeDiameter(g);
  r.period = schedule.period();
  auto start = std::chrono::steady_clock::now();
  r.spectral = SecondLargestEigenvalue(schedule.At(0));
  r.spectral_seconds = SecondsSince(start);
  if (r.period == 1) return r;
  r.rounds =
      rounds != 0 ? rounds : (r.period != 0 ? r.period : std::max<std::uint32_t>(1, CeilLog2(g.num_nodes())));
  if (r.rounds > 4096) return Status::InvalidArgument("rounds must be in [1, 4096]");
  std::vector<MixingMatrix> mats;
  mats.reserve(r.rounds);
  for (std::uint64_t t = 0; t < r.rounds; ++t) mats.push_back(schedule.At(t));
  start = std::chrono::steady_clock::now();
  r.contraction = ProductContraction(mats);
  r.contraction_seconds = SecondsSince(start);
  r.per_round = std::pow(r.contraction.rho, 1.0 / static_cast<double>(r.rounds));
  return r;
}

}  // namespace murmur::topology
