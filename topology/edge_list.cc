#include "topology/edge_list.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "topology/weights.h"

namespace murmur::topology {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> Fields(std::string_view s) {
  std::vector<std::string_view> out;
  while (!(s = Trim(s)).empty()) {
    std::size_t end = s.find_first_of(" \t");
    out.push_back(s.substr(0, end));
    if (end == std::string_view::npos) break;
    s.remove_prefix(end);
  }
  return out;
}

bool ParseId(std::string_view s, std::uint64_t* out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

bool ParseWeight(std::string_view s, double* out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// The weight to print for an edge: W(v, u), the weight of u's value at v.
double EdgeWeight(const MixingMatrix& w, const Edge& e) { return w.At(e.v, e.u); }

}  // namespace

Result<EdgeListFile> ParseEdgeList(std::string_view text, std::string_view name, NodeId n,
                                   Directedness directedness) {
  struct Line {
    std::uint64_t u, v;
    double w;
    std::size_t line;
  };
  std::vector<Line> lines;
  std::size_t line_no = 0;
  std::size_t first_data_line = 0;
  bool weighted = false;
  std::unordered_map<std::uint64_t, std::size_t> seen;
  const std::string prefix = std::string(name) + ":";
  while (!text.empty()) {
    ++line_no;
    std::size_t nl = text.find('\n');
    std::string_view raw = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    std::string_view content = raw.substr(0, raw.find('#'));
    auto fields = Fields(content);
    if (fields.empty()) continue;
    auto at = [&](const std::string& msg) {
      return Status::InvalidArgument(prefix + std::to_string(line_no) + ": " + msg);
    };
    if (fields.size() != 2 && fields.size() != 3)
      return at("expected 'u v' or 'u v w', got '" + std::string(Trim(content)) + "'");
    Line l{0, 0, 0, line_no};
    if (!ParseId(fields[0], &l.u) || !ParseId(fields[1], &l.v))
      return at("node ids must be non-negative integers, got '" + std::string(Trim(content)) + "'");
    const bool has_weight = fields.size() == 3;
    if (first_data_line == 0) {
      first_data_line = line_no;
      weighted = has_weight;
    } else if (has_weight != weighted) {
      return at(std::string(has_weight ? "has" : "lacks") + " a weight but line " +
                std::to_string(first_data_line) + (weighted ? " has one" : " does not"));
    }
    if (has_weight) {
      if (!ParseWeight(fields[2], &l.w)) return at("weight '" + std::string(fields[2]) + "' is not a number");
      if (!(l.w >= 0) || !std::isfinite(l.w))
        return at("weight " + std::string(fields[2]) + " is negative or not finite");
    }
    const std::uint64_t limit = n != 0 ? n : kMaxInferredNodes;
    for (std::uint64_t id : {l.u, l.v})
      if (id >= limit)
        return at("node " + std::to_string(id) + " out of range for " + std::to_string(limit) + " nodes" +
                  (n == 0 ? " (the most a file may imply)" : ""));
    if (l.u == l.v) return at("self-loop at node " + std::to_string(l.u));
    std::uint64_t a = l.u, b = l.v;
    if (directedness == Directedness::kUndirected && a > b) std::swap(a, b);
    auto [it, inserted] = seen.emplace((a << 32) | b, line_no);
    if (!inserted)
      return at("edge (" + std::to_string(l.u) + ", " + std::to_string(l.v) + ") repeats line " +
                std::to_string(it->second));
    lines.push_back(l);
  }
  NodeId nodes = n;
  if (nodes == 0)
    for (const Line& l : lines) nodes = std::max<NodeId>(nodes, static_cast<NodeId>(std::max(l.u, l.v) + 1));
  std::vector<Edge> edges;
  std::vector<double> weights;
  edges.reserve(lines.size());
  for (const Line& l : lines) {
    edges.push_back({static_cast<NodeId>(l.u), static_cast<NodeId>(l.v)});
    weights.push_back(l.w);
  }
  EdgeListFile file;
  MURMUR_ASSIGN_OR_RETURN(file.graph, Graph::FromEdges(nodes, edges, directedness));
  if (weighted) {
    auto w = CustomWeights(nodes, edges, weights, directedness);
    if (!w.ok()) return w.status().WithContext(name);
    file.weighted = true;
    file.weights = std::move(w).value();
  }
  return file;
}

Result<EdgeListFile> ReadEdgeList(const std::string& path, NodeId n, Directedness directedness) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open edge-list file " + path);
  std::ostringstream text;
  text << in.rdbuf();
  std::string name =
      path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  return ParseEdgeList(text.str(), name, n, directedness);
}

void WriteEdgeList(const Graph& g, std::ostream& out) {
  out << "# " << g.num_nodes() << " nodes, " << g.num_edges() << (g.directed() ? " arcs" : " edges") << "\n";
  for (const Edge& e : g.Edges()) out << e.u << ' ' << e.v << '\n';
}

std::string InlineEdgeList(const Graph& g) {
  std::ostringstream out;
  const char* sep = "";
  for (const Edge& e : g.Edges()) {
    out << sep << e.u << ' ' << e.v;
    sep = ";";
  }
  return out.str();
}

void WriteDot(const Graph& g, const MixingMatrix* weights, std::ostream& out) {
  const char* arrow = g.directed() ? " -> " : " -- ";
  out << (g.directed() ? "digraph" : "graph") << " murmur {\n";
  for (NodeId u = 0; u < g.num_nodes(); ++u) out << "  " << u << ";\n";
  for (const Edge& e : g.Edges()) {
    out << "  " << e.u << arrow << e.v;
    if (weights != nullptr) out << " [label=\"" << EdgeWeight(*weights, e) << "\"]";
    out << ";\n";
  }
  out << "}\n";
}

void WriteJson(const Graph& g, const MixingMatrix* weights, std::ostream& out) {
  out << "{\"nodes\": " << g.num_nodes() << ", \"directed\": " << (g.directed() ? "true" : "false")
      << ", \"edges\": [";
  bool first = true;
  for (const Edge& e : g.Edges()) {
    out << (first ? "" : ", ") << '[' << e.u << ", " << e.v;
    if (weights != nullptr) out << ", " << EdgeWeight(*weights, e);
    out << ']';
    first = false;
  }
  out << "]}\n";
}

}  // namespace murmur::topology
