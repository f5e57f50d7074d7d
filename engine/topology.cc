#include "engine/topology.h"

#include <cmath>
#include <set>
#include <sstream>

#include "topology/analysis.h"
#include "topology/link_aware.h"
#include "topology/spectral.h"

namespace murmur::engine {

namespace {

std::vector<std::string> SplitColons(const std::string& s) {
  std::vector<std::string> parts;
  std::stringstream ss(s);
  std::string p;
  while (std::getline(ss, p, ':')) parts.push_back(p);
  return parts;
}

Result<double> ParseNumber(const std::string& text) {
  try {
    std::size_t used = 0;
    double v = std::stod(text, &used);
    if (used == text.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  return Status::InvalidArgument("spec field 'topology': '" + text + "' is not a number");
}

}  // namespace

bool IsTimeVarying(const std::string& topology) {
  const std::string kind = TopologyKind(topology);
  return kind == "one-peer-exponential" || kind == "random-matching" || kind == "vehicles";
}

std::string TopologyKind(const std::string& topology) { return topology.substr(0, topology.find(':')); }

Result<topology::WeightOptions> WeightsFor(const proto::JobSpec& spec, bool* given) {
  *given = true;
  if (spec.algorithm() == "push-sum") return topology::WeightOptions{topology::WeightRule::kPushSum, false};
  if (spec.weights() == "default") {
    *given = false;
    return topology::WeightOptions{};
  }
  auto w = topology::ParseWeightOptions(spec.weights());
  if (!w.ok()) return w.status().WithContext("spec field 'weights'");
  return w;
}

Result<topology::TopologySpec> GraphSpecOf(const proto::JobSpec& s, NodeId nodes) {
  const auto parts = SplitColons(s.topology());
  topology::TopologySpec spec;
  spec.kind = parts.empty() ? "" : parts[0];
  spec.nodes = nodes;
  spec.seed = s.seed();
  MURMUR_ASSIGN_OR_RETURN(spec.weights, WeightsFor(s, &spec.weights_given));
  // A parameter given is used as given: one that cannot be meant is refused
  // rather than replaced by the kind's default (which leaving it out gives).
  auto degree = [&](const std::string& text) -> Result<std::uint32_t> {
    MURMUR_ASSIGN_OR_RETURN(double d, ParseNumber(text));
    if (!(d >= 1 && d <= 1e6 && d == std::floor(d)))
      return Status::InvalidArgument("spec field 'topology': " + spec.kind + "'s degree '" + text +
                                     "' must be a whole number >= 1");
    return static_cast<std::uint32_t>(d);
  };
  if (spec.kind == "regular" && parts.size() == 2) {
    MURMUR_ASSIGN_OR_RETURN(spec.degree, degree(parts[1]));
  } else if (spec.kind == "erdos-renyi" && parts.size() == 2) {
    MURMUR_ASSIGN_OR_RETURN(spec.prob, ParseNumber(parts[1]));
    if (!(spec.prob > 0 && spec.prob <= 1))
      return Status::InvalidArgument("spec field 'topology': erdos-renyi's edge probability '" + parts[1] +
                                     "' must be in (0, 1] (without it: 2 ln(n) / n)");
  } else if (spec.kind == "small-world" && parts.size() == 3) {
    MURMUR_ASSIGN_OR_RETURN(spec.degree, degree(parts[1]));
    MURMUR_ASSIGN_OR_RETURN(spec.beta, ParseNumber(parts[2]));
  } else if (spec.kind == "link-aware" && parts.size() == 2) {
    MURMUR_ASSIGN_OR_RETURN(spec.degree, degree(parts[1]));
  } else if (spec.kind == "geometric" && parts.size() == 2) {
    MURMUR_ASSIGN_OR_RETURN(spec.radius, ParseNumber(parts[1]));
    if (!(spec.radius > 0))
      return Status::InvalidArgument("spec field 'topology': geometric's radius '" + parts[1] +
                                     "' must be > 0 (without it: sqrt(2 ln(n) / (pi n)))");
  } else if (spec.kind == "file" && parts.size() >= 2) {
    spec.file = s.topology().substr(5);
  } else if (spec.kind == "edges" && parts.size() == 2) {
    spec.edges = parts[1];
  } else if (parts.size() != 1) {
    return Status::InvalidArgument("spec field 'topology': '" + s.topology() + "' has unexpected parameters");
  }
  return spec;
}

bool IsLinkAware(const std::string& topology) { return topology::IsLinkAwareKind(TopologyKind(topology)); }

Result<GraphTopology> MakeGraphTopology(const proto::JobSpec& s, NodeId nodes, bool describe,
                                        const topology::PairCost& link_cost) {
  MURMUR_ASSIGN_OR_RETURN(topology::TopologySpec spec, GraphSpecOf(s, nodes));
  spec.link_cost = link_cost;
  auto made = topology::MakeSchedule(spec);
  if (!made.ok()) return made.status().WithContext("spec field 'topology'");
  GraphTopology t;
  t.schedule = std::move(made).value();
  // No gossip algorithm reaches consensus across the components of a static
  // graph: refuse it rather than run nodes that can never agree.
  if (t.schedule->period() == 1 && nodes > 1 && !topology::IsConnected(t.schedule->GraphAt(0)))
    return Status::InvalidArgument("spec field 'topology': '" + s.topology() + "' over " +
                                   std::to_string(nodes) + " nodes is not connected" +
                                   (t.schedule->GraphAt(0).directed() ? " (strongly)" : "") +
                                   "; gossip can never reach consensus across its parts");
  std::ostringstream desc;
  desc << s.topology();
  if (IsLinkAware(s.topology()) && t.schedule->period() == 1) {
    const topology::Graph& g = t.schedule->GraphAt(0);
    const topology::EdgeCosts c = topology::CostOf(g, link_cost);
    desc << " (" << g.num_edges() << " edges, slowest " << c.slowest << " s a model, " << c.total
         << " s in all)";
  }
  if (t.schedule->period() == 1) {
    const topology::MixingMatrix& m = t.schedule->At(0);
    if (describe && nodes <= 4096) {
      auto info = topology::SecondLargestEigenvalue(m);
      desc << " (spectral gap " << info.gap() << ")";
    }
    t.rounds = std::make_unique<gossip::RoundTopology>(m);
  } else {
    topology::Schedule* sched = t.schedule.get();
    t.rounds = std::make_unique<gossip::RoundTopology>([sched](std::uint64_t r) { return sched->At(r); });
  }
  if (describe) t.description = desc.str();
  return t;
}

std::vector<NodeId> NeighboursOf(topology::Schedule& schedule, NodeId self) {
  const NodeId n = schedule.num_nodes();
  std::set<NodeId> peers;
  const std::uint64_t period = schedule.period();
  if (period == 0) {  // every round drawn afresh: anyone may be a neighbour
    for (NodeId j = 0; j < n; ++j) peers.insert(j);
  } else {
    for (std::uint64_t r = 0; r < period; ++r) {
      const topology::MixingMatrix& w = schedule.At(r);
      for (NodeId j = 0; j < n; ++j) {
        if (w.At(self, j) != 0 || w.At(j, self) != 0) peers.insert(j);
      }
    }
  }
  peers.erase(self);
  return {peers.begin(), peers.end()};
}

Status ApplyTopologyKindText(topology::TopologySpec& spec, bool nodes_given) {
  const std::string text = spec.kind;
  const std::size_t colon = text.find(':');
  if (colon == std::string::npos) return Status::Ok();
  proto::JobSpec job;
  job.set_topology(text);
  job.set_seed(spec.seed);
  MURMUR_ASSIGN_OR_RETURN(topology::TopologySpec parsed, GraphSpecOf(job, spec.nodes));
  spec.kind = parsed.kind;
  if (colon + 1 < text.size()) {
    if (spec.kind == "regular" || spec.kind == "small-world" || spec.kind == "link-aware")
      spec.degree = parsed.degree;
    if (spec.kind == "small-world") spec.beta = parsed.beta;
    if (spec.kind == "erdos-renyi") spec.prob = parsed.prob;
    if (spec.kind == "geometric") spec.radius = parsed.radius;
    if (spec.kind == "edges") spec.edges = parsed.edges;
    if (spec.kind == "file") spec.file = parsed.file;
  }
  if ((spec.kind == "edges" || spec.kind == "file") && !nodes_given) spec.nodes = 0;
  return Status::Ok();
}

}  // namespace murmur::engine
