// murmur topology: build a topology, print its degree, diameter and spectral
// gap, and optionally export the graph.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <cxxopts.hpp>

#include "apps/murmur/command.h"
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
    ("n,nodes", "number of nodes (default 16; file: the file's, 1 + its largest id)", cxxopts::value<std::uint32_t>())
    ("seed", "seed of the random kinds", cxxopts::value<std::uint64_t>()->default_value("1"))
    ("weights", "uniform, mh, maxdeg, lazy-uniform, lazy-mh, lazy-maxdeg or push-sum "
                "(default: mh; uniform on directed graphs; a weighted file's own weights)",
     cxxopts::value<std::string>())
    ("degree", "degree of regular and small-world", cxxopts::value<std::uint32_t>()->default_value("4"))
    ("prob", "edge probability of erdos-renyi (default 2 ln(n)/n)", cxxopts::value<double>()->default_value("0"))
    ("beta", "rewiring probability of small-world", cxxopts::value<double>()->default_value("0.1"))
    ("radius", "radius of geometric in the unit square (default sqrt(2 ln(n)/(pi n)))",
     cxxopts::value<double>()->default_value("0"))
    ("file", "edge-list file for kind 'file' (\"u v\" or \"u v w\" per line)", cxxopts::value<std::string>())
    ("directed", "file: read \"u v\" as the arc u -> v")
    ("rounds", "rounds in the product of a time-varying kind (default: its period, or ceil(log2 n))",
     cxxopts::value<std::uint64_t>())
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
  const auto& kinds = topology::TopologyKinds();
  if (std::find(kinds.begin(), kinds.end(), spec.kind) == kinds.end())
    return UsageError(kName, "unknown topology '" + spec.kind + "' (one of: " + JoinKinds() + ")");
  spec.nodes = args.count("nodes") ? args["nodes"].as<std::uint32_t>() : (spec.kind == "file" ? 0 : 16);
  spec.seed = args["seed"].as<std::uint64_t>();
  spec.degree = args["degree"].as<std::uint32_t>();
  spec.prob = args["prob"].as<double>();
  spec.beta = args["beta"].as<double>();
  spec.radius = args["radius"].as<double>();
  spec.directed = args.count("directed") > 0;
  if (args.count("file")) spec.file = args["file"].as<std::string>();
  if (spec.kind == "file" && spec.file.empty()) return UsageError(kName, "kind 'file' needs --file");
  if (spec.kind != "file" && spec.nodes == 0) return UsageError(kName, "--nodes must be at least 1");
  if (spec.prob < 0 || spec.prob > 1) return UsageError(kName, "--prob must be in [0, 1]");
  if (spec.beta < 0 || spec.beta > 1) return UsageError(kName, "--beta must be in [0, 1]");
  if (spec.radius < 0) return UsageError(kName, "--radius must be positive");
  if (args.count("weights")) {
    if (spec.kind == "one-peer-exponential" || spec.kind == "random-matching")
      return UsageError(kName, "--weights cannot apply to '" + spec.kind +
                                   "', whose rounds pair each node with one peer at weight 1/2");
    auto w = topology::ParseWeightOptions(args["weights"].as<std::string>());
    if (!w.ok()) return UsageError(kName, w.status().message());
    spec.weights = *w;
    spec.weights_given = true;
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
    return Failure(kName, made.status().ToString());
  }
  topology::Schedule& schedule = **made;
  const double build_seconds = SecondsSince(start);
  const topology::Graph& g = schedule.GraphAt(0);
  const topology::MixingMatrix w0 = schedule.At(0);
  if (!format.empty()) {
    int rc = Export(format, args["out"].as<std::string>(), g, w0);
    if (rc != kExitOk || args["out"].as<std::string>().empty()) return rc;
  }

  topology::DegreeStats deg = topology::ComputeDegreeStats(g);
  topology::DiameterInfo diam = topology::ComputeDiameter(g);
  std::printf("kind            %s\n", spec.kind.c_str());
  std::printf("nodes           %u\n", g.num_nodes());
  std::printf("edges           %zu%s\n", g.num_edges(), g.directed() ? " (directed arcs)" : "");
  std::printf("degree          min %zu  mean %.2f  max %zu%s\n", deg.min, deg.mean, deg.max,
              schedule.period() == 1 ? "" : "  (round 0)");
  std::printf("connected       %s\n", topology::IsConnected(g) ? "yes" : "no");
  if (!diam.finite) {
    std::printf("diameter        infinite (not connected)\n");
  } else {
    std::printf("diameter        %u%s\n", diam.value,
                diam.exact ? "" : "  (estimate: lower bound from 4 BFS sweeps)");
  }
  std::printf("build time      %.3f s\n", build_seconds);
  start = std::chrono::steady_clock::now();
  topology::SpectralInfo s = topology::SecondLargestEigenvalue(w0);
  std::printf("rho             %.9f%s  (%s, %.3f s)\n", s.rho, s.converged ? "" : " not converged",
              s.method.c_str(), SecondsSince(start));
  std::printf("spectral gap    %.9f\n", s.gap());
  if (schedule.period() != 1) {
    std::uint64_t rounds = schedule.period() != 0
                               ? schedule.period()
                               : std::max<std::uint32_t>(1, topology::CeilLog2(g.num_nodes()));
    if (args.count("rounds")) rounds = args["rounds"].as<std::uint64_t>();
    if (rounds == 0 || rounds > 4096) return UsageError(kName, "--rounds must be in [1, 4096]");
    std::vector<topology::MixingMatrix> mats;
    for (std::uint64_t t = 0; t < rounds; ++t) mats.push_back(schedule.At(t));
    start = std::chrono::steady_clock::now();
    topology::SpectralInfo c = topology::ProductContraction(mats);
    std::printf("period          %s\n", schedule.period() == 0 ? "none (random each round)"
                                                               : std::to_string(schedule.period()).c_str());
    std::printf("contraction     %.9f%s over %llu rounds  (%s, %.3f s)\n", c.rho,
                c.converged ? "" : " not converged", static_cast<unsigned long long>(rounds),
                c.method.c_str(), SecondsSince(start));
    std::printf("per round       %.9f\n", std::pow(c.rho, 1.0 / static_cast<double>(rounds)));
  }
  return kExitOk;
}

MURMUR_COMMAND("topology", "build a topology; print degree, diameter, spectral gap; export it", RunTopology);

}  // namespace murmur::cli
