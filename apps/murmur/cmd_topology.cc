// murmur topology: build a topology, print its degree, diameter and spectral
// gap, and optionally export the graph.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <cxxopts.hpp>

#include "apps/murmur/command.h"
#include "engine/topology.h"
#include "sim/net/link_costs.h"
#include "topology/topology.h"

namespace murmur::cli {
namespace {

constexpr const char* kName = "topology";

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string JoinKinds() {
  std::string s;
  for (const std::string& k : topology::TopologyKinds()) s += (s.empty() ? "" : ", ") + k;
  return s;
}

int Export(const std::string& format, const std::string& out_path, const topology::Graph& g,
           const topology::MixingMatrix& w) {
  std::ostringstream text;
  if (format == "dot") {
    topology::WriteDot(g, &w, text);
  } else if (format == "json") {
    topology::WriteJson(g, &w, text);
  } else {
    topology::WriteEdgeList(g, text);
  }
  if (out_path.empty() || out_path == "-") {
    std::fputs(text.str().c_str(), stdout);
    return kExitOk;
  }
  std::ofstream out(out_path, std::ios::binary);
  out << text.str();
  if (!out) return Failure(kName, "cannot write " + out_path);
  std::fprintf(stderr, "wrote %s (%s)\n", out_path.c_str(), format.c_str());
  return kExitOk;
}

}  // namespace

int RunTopology(int argc, char** argv) {
  cxxopts::Options options(
      "murmur topology",
      "Build a communication topology and report its degree, diameter and spectral gap.\n"
      "KIND is one of: " +
          JoinKinds());
  // clang-format off
  options.add_options()
    ("kind", "topology kind", cxxopts::value<std::string>())
    ("n,nodes", "number of nodes (default 16; file, edges: the list's, 1 + its largest id)", cxxopts::value<std::uint32_t>())
    ("seed", "seed of the random kinds", cxxopts::value<std::uint64_t>()->default_value("1"))
    ("weights", "uniform, mh, maxdeg, lazy-uniform, lazy-mh, lazy-maxdeg or push-sum "
                "(default: mh; uniform on directed graphs; a weighted file's own weights)",
     cxxopts::value<std::string>())
    ("degree", "degree of regular and small-world", cxxopts::value<std::uint32_t>()->default_value("4"))
    ("prob", "edge probability of erdos-renyi (default 2 ln(n)/n)", cxxopts::value<double>())
    ("beta", "rewiring probability of small-world", cxxopts::value<double>()->default_value("0.1"))
    ("radius", "radius of geometric in the unit square (default sqrt(2 ln(n)/(pi n)))",
     cxxopts::value<double>())
    ("file", "edge-list file for kind 'file' (\"u v\" or \"u v w\" per line)", cxxopts::value<std::string>())
    ("edges", "edge list for kind 'edges', lines separated by ';' (\"0 1;1 2;2 0\")", cxxopts::value<std::string>())
    ("directed", "file, edges: read \"u v\" as the arc u -> v")
    ("rounds", "rounds in the product of a time-varying kind (default: its period, or ceil(log2 n))",
     cxxopts::value<std::uint64_t>())
    ("links", "link-aware kinds: the paths between pairs, as the simulator's links: sites:S:LAN:WAN[:MS], "
              "plane:FAST:SLOW[:MS] or trace:FILE.csv (a,b,mbps,latency_ms)", cxxopts::value<std::string>())
    ("devices", "link-aware kinds: the nodes' own links, as the simulator's devices (uniform, a class, a mix "
                "or trace:FILE.csv)", cxxopts::value<std::string>()->default_value("uniform"))
    ("measured", "link-aware kinds: pair costs measured on a fleet, FILE.csv of from,to,rtt_ms[,mbps] rows "
                 "(murmur peers --rtt-csv), instead of --links and --devices",
     cxxopts::value<std::string>())
    ("model-bytes", "link-aware kinds: the bytes of the model each edge carries a round (the cost of an edge "
                    "is the seconds they take over it)", cxxopts::value<double>()->default_value("407080"))
    ("export", "write the (round 0) graph as dot, json or edges", cxxopts::value<std::string>())
    ("out", "file for --export (default: stdout)", cxxopts::value<std::string>()->default_value(""))
    ("h,help", "show this help");
  // clang-format on
  options.parse_positional({"kind"});
  options.positional_help("KIND");
  cxxopts::ParseResult args;
  if (auto stop = ParseFlags(options, argc, argv, kName, &args)) return *stop;
  if (!args.count("kind")) return UsageError(kName, "missing KIND (one of: " + JoinKinds() + ")");

  topology::TopologySpec spec;
  spec.kind = args["kind"].as<std::string>();
  const bool listed = spec.kind == "file" || spec.kind == "edges";
  spec.nodes = args.count("nodes") ? args["nodes"].as<std::uint32_t>() : (listed ? 0 : 16);
  spec.seed = args["seed"].as<std::uint64_t>();
  spec.degree = args["degree"].as<std::uint32_t>();
  spec.prob = args.count("prob") ? args["prob"].as<double>() : 0;  // 0: the kind's default
  spec.beta = args["beta"].as<double>();
  spec.radius = args.count("radius") ? args["radius"].as<double>() : 0;
  if (args.count("prob") && !(spec.prob > 0 && spec.prob <= 1))
    return UsageError(kName, "--prob must be in (0, 1] (without it: 2 ln(n) / n)");
  if (args.count("radius") && !(spec.radius > 0))
    return UsageError(kName, "--radius must be > 0 (without it: sqrt(2 ln(n) / (pi n)))");
  spec.directed = args.count("directed") > 0;
  if (args.count("file")) spec.file = args["file"].as<std::string>();
  if (args.count("edges")) spec.edges = args["edges"].as<std::string>();
  // KIND may also be written as in a job's topology field (regular:4,
  // erdos-renyi:0.3, "edges:0 1;1 2"): its parameters then replace the flags'.
  if (Status st = engine::ApplyTopologyKindText(spec, args.count("nodes") > 0); !st.ok())
    return UsageError(kName, st.message());
  if (args.count("weights")) {
    auto w = topology::ParseWeightOptions(args["weights"].as<std::string>());
    if (!w.ok()) return UsageError(kName, w.status().message());
    spec.weights = *w;
    spec.weights_given = true;
  }
  // Link-aware kinds: costs from the same device and link models as the
  // simulator's, or measured on a fleet (sim/net/link_costs.h, as murmur.topology reads them).
  sim::LinkCostOptions cost_options;
  cost_options.devices = args["devices"].as<std::string>();
  if (args.count("links")) cost_options.links = args["links"].as<std::string>();
  if (args.count("measured")) cost_options.measured = args["measured"].as<std::string>();
  cost_options.model_bytes = args["model-bytes"].as<double>();
  cost_options.nodes = args.count("measured") && !args.count("nodes") ? 0 : spec.nodes;
  cost_options.seed = spec.seed;
  auto costs = sim::LinkCosts::Make(cost_options);
  if (!costs.ok()) return UsageError(kName, costs.status().message());
  if ((*costs)->any()) {
    spec.nodes = (*costs)->nodes();
    spec.link_cost = (*costs)->cost();
  }
  if (Status st = topology::CheckTopologySpec(spec); !st.ok()) return UsageError(kName, st.message());
  std::uint64_t rounds = 0;  // the schedule's default
  if (args.count("rounds")) {
    rounds = args["rounds"].as<std::uint64_t>();
    if (rounds == 0 || rounds > 4096) return UsageError(kName, "--rounds must be in [1, 4096]");
  }
  std::string format;
  if (args.count("export")) {
    format = args["export"].as<std::string>();
    if (format != "dot" && format != "json" && format != "edges")
      return UsageError(kName, "--export must be dot, json or edges, got '" + format + "'");
  }

  auto start = std::chrono::steady_clock::now();
  auto made = topology::MakeSchedule(spec);
  if (!made.ok()) {
    if (made.status().code() == StatusCode::kInvalidArgument)
      return UsageError(kName, made.status().message());
    return Failure(kName, made.status().message());
  }
  topology::Schedule& schedule = **made;
  const double build_seconds = SecondsSince(start);
  if (!format.empty()) {
    int rc = Export(format, args["out"].as<std::string>(), schedule.GraphAt(0), schedule.At(0));
    if (rc != kExitOk || args["out"].as<std::string>().empty()) return rc;
  }

  auto described = topology::DescribeSchedule(schedule, rounds);
  if (!described.ok()) return UsageError(kName, described.status().message());
  const topology::TopologyReport& r = *described;
  std::printf("kind            %s\n", spec.kind.c_str());
  std::printf("nodes           %u\n", r.nodes);
  std::printf("edges           %zu%s\n", r.edges, r.directed ? " (directed arcs)" : "");
  std::printf("degree          min %zu  mean %.2f  max %zu%s\n", r.degree.min, r.degree.mean, r.degree.max,
              r.period == 1 ? "" : "  (round 0)");
  std::printf("connected       %s\n", r.connected ? "yes" : "no");
  if (!r.diameter.finite) {
    std::printf("diameter        infinite (not connected)\n");
  } else {
    std::printf("diameter        %u%s\n", r.diameter.value,
                r.diameter.exact ? "" : "  (estimate: lower bound from 4 BFS sweeps)");
  }
  std::printf("build time      %.3f s\n", build_seconds);
  if (spec.link_cost) {  // what a round's slowest edge and all edges cost in the link model
    const topology::EdgeCosts c = topology::CostOf(schedule.GraphAt(0), spec.link_cost);
    std::printf("links           %s\n", (*costs)->Describe().c_str());
    std::printf("slowest edge    %.6f s a model  (all edges %.6f s)\n", c.slowest, c.total);
  }
  std::printf("rho             %.9f%s  (%s, %.3f s)\n", r.spectral.rho,
              r.spectral.converged ? "" : " not converged", r.spectral.method.c_str(), r.spectral_seconds);
  std::printf("spectral gap    %.9f\n", r.spectral.gap());
  if (r.period != 1) {
    std::printf("period          %s\n",
                r.period == 0 ? "none (random each round)" : std::to_string(r.period).c_str());
    std::printf("contraction     %.9f%s over %llu rounds  (%s, %.3f s)\n", r.contraction.rho,
                r.contraction.converged ? "" : " not converged", static_cast<unsigned long long>(r.rounds),
                r.contraction.method.c_str(), r.contraction_seconds);
    std::printf("per round       %.9f\n", r.per_round);
  }
  return kExitOk;
}

MURMUR_COMMAND("topology", "build a topology; print degree, diameter, spectral gap; export it", RunTopology);

}  // namespace murmur::cli
