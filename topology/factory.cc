#include "topology/factory.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "topology/edge_list.h"
#include "topology/generators.h"

namespace murmur::topology {
namespace {

// Largest network MakeSchedule builds; keeps a typo from allocating terabytes.
constexpr NodeId kMaxNodes = 1u << 24;

NodeId TorusRows(NodeId n) {
  NodeId p = 1;
  for (NodeId a = 1; static_cast<std::uint64_t>(a) * a <= n; ++a)
    if (n % a == 0) p = a;
  return p;
}

Result<Graph> MakeGraph(const TopologySpec& s) {
  const NodeId n = s.nodes;
  const double ln_n = std::log(std::max<double>(n, 2));
  if (s.kind == "complete") {
    if (n > kMaxCompleteNodes)
      return Status::InvalidArgument("complete graph limited to " + std::to_string(kMaxCompleteNodes) +
                                     " nodes");
    return Complete(n);
  }
  if (s.kind == "ring") return Ring(n);
  if (s.kind == "torus") return Torus(TorusRows(n), n / TorusRows(n));
  if (s.kind == "star") return Star(n);
  if (s.kind == "dumbbell") {
    if (n > 2 * kMaxCompleteNodes)
      return Status::InvalidArgument("dumbbell limited to " + std::to_string(2 * kMaxCompleteNodes) +
                                     " nodes");
    return Dumbbell(n);
  }
  if (s.kind == "hypercube") {
    if (n == 0 || (n & (n - 1)) != 0)
      return Status::InvalidArgument("hypercube needs a power-of-two node count, got " + std::to_string(n));
    return Hypercube(n);
  }
  if (s.kind == "exponential") return Exponential(n);
  if (s.kind == "regular") return RandomRegular(n, s.degree, s.seed);
  if (s.kind == "erdos-renyi")
    return ErdosRenyi(n, s.prob > 0 ? s.prob : std::min(1.0, 2 * ln_n / n), s.seed);
  if (s.kind == "small-world") return WattsStrogatz(n, s.degree, s.beta, s.seed);
  if (s.kind == "geometric") {
    double r = s.radius > 0 ? s.radius : std::sqrt(2 * ln_n / (std::numbers::pi * std::max<NodeId>(n, 1)));
    auto positions = UniformPositions(n, s.seed);
    return RandomGeometric(positions, r);
  }
  if (s.kind == "link-aware" || s.kind == "link-aware-ring") {
    if (!s.link_cost)
      return Status::InvalidArgument(s.kind +
                                     " is chosen from link costs, and none were given (the simulator "
                                     "takes them from its link model, scenario field 'links')");
    if (s.kind == "link-aware") return LinkAwareGraph(n, s.degree, s.link_cost, s.seed);
    if (n > kMaxLinkAwareNodes)
      return Status::InvalidArgument("link-aware-ring is limited to " + std::to_string(kMaxLinkAwareNodes) +
                                     " nodes, got " + std::to_string(n));
    return TourGraph(LeastCostTour(n, s.link_cost));
  }
  return Status::InvalidArgument("unknown topology '" + s.kind + "'");
}

}  // namespace

const std::vector<std::string>& TopologyKinds() {
  static const std::vector<std::string> kinds = {
      "complete",  "ring",        "torus",       "star",
      "dumbbell",  "hypercube",   "exponential", "one-peer-exponential",
      "regular",   "erdos-renyi", "small-world", "random-matching",
      "geometric", "file",        "edges"};
  return kinds;
}

Result<std::unique_ptr<Schedule>> MakeSchedule(const TopologySpec& spec) {
  const bool listed = spec.kind == "file" || spec.kind == "edges";
  if (spec.nodes == 0 && !listed) return Status::InvalidArgument("a topology needs at least 1 node");
  if (spec.nodes > kMaxNodes)
    return Status::InvalidArgument(std::to_string(spec.nodes) + " nodes over the limit of " +
                                   std::to_string(kMaxNodes));
  if (spec.kind == "one-peer-exponential")
    return std::unique_ptr<Schedule>(std::make_unique<OnePeerExponentialSchedule>(spec.nodes));
  if (spec.kind == "random-matching")
    return std::unique_ptr<Schedule>(std::make_unique<RandomMatchingSchedule>(spec.nodes, spec.seed));
  Graph graph;
  EdgeListFile file;
  if (listed) {
    const Directedness directedness = spec.directed ? Directedness::kDirected : Directedness::kUndirected;
    std::string name = "topology 'file' " + spec.file;
    if (spec.kind == "file") {
      if (spec.file.empty()) return Status::InvalidArgument("topology 'file' needs an edge-list file");
      MURMUR_ASSIGN_OR_RETURN(file, ReadEdgeList(spec.file, 0, directedness));
    } else {
      if (spec.edges.empty()) return Status::InvalidArgument("topology 'edges' needs at least one edge");
      std::string text = spec.edges;
      std::replace(text.begin(), text.end(), ';', '\n');
      name = "topology 'edges'";
      MURMUR_ASSIGN_OR_RETURN(file, ParseEdgeList(text, name, 0, directedness));
    }
    // The list says how many nodes there are (1 + its largest id): a count
    // that disagrees would add nodes no edge reaches, or drop some.
    if (spec.nodes != 0 && spec.nodes != file.graph.num_nodes())
      return Status::InvalidArgument(name + " has " + std::to_string(file.graph.num_nodes()) +
                                     " nodes (ids 0 .. " + std::to_string(file.graph.num_nodes() - 1) +
                                     "), not the " + std::to_string(spec.nodes) + " asked for");
    graph = std::move(file.graph);
  } else {
    MURMUR_ASSIGN_OR_RETURN(graph, MakeGraph(spec));
  }
  WeightOptions options = spec.weights;
  if (!spec.weights_given)
    options = {graph.directed() ? WeightRule::kUniform : WeightRule::kMetropolisHastings, false};
  MixingMatrix w;
  Stochasticity kind;
  if (file.weighted && !spec.weights_given) {
    w = std::move(file.weights);
    kind = Stochasticity::kRow;
  } else {
    MURMUR_ASSIGN_OR_RETURN(w, MakeWeights(graph, options));
    kind = RuleStochasticity(graph, options);
  }
  Status valid = w.Validate(kind, &graph);
  if (!valid.ok()) {
    if (file.weighted) return valid.WithContext(spec.kind == "file" ? spec.file : "topology 'edges'");
    return Status::Internal("generated weights are invalid: " + valid.message());
  }
  return std::unique_ptr<Schedule>(std::make_unique<StaticSchedule>(std::move(graph), std::move(w), kind));
}

}  // namespace murmur::topology
