// Edge-list files and graph export.
//
// An edge-list file has one edge per line, "u v" or "u v w" (w a
// non-negative weight; either every line has one or none does), with node
// ids in [0, n); '#' starts a comment, blank lines are ignored. The file is
// untrusted: every error is a Status naming the file and line,
// "edges.txt:12: node 99 out of range for 50 nodes", and nothing is
// allocated from a number in the file before it is checked against a limit.
// Export writes the same format, Graphviz DOT, or JSON.
//
// Thread-safety: pure functions.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

#include "core/status.h"
#include "topology/graph.h"
#include "topology/mixing_matrix.h"

namespace murmur::topology {

// Largest node count inferred from a file's ids (when no count is given).
inline constexpr NodeId kMaxInferredNodes = 1u << 24;

struct EdgeListFile {
  Graph graph;
  // When the lines carry weights: CustomWeights of them (topology/weights.h).
  bool weighted = false;
  MixingMatrix weights;
};

// Parses `text`; `name` prefixes error messages. n = 0 infers the node count
// as 1 + the largest id (at most kMaxInferredNodes).
Result<EdgeListFile> ParseEdgeList(std::string_view text, std::string_view name, NodeId n,
                                   Directedness directedness);
// Reads and parses the file at `path` (NotFound when it cannot be opened).
Result<EdgeListFile> ReadEdgeList(const std::string& path, NodeId n, Directedness directedness);

// "u v" per edge (u < v when undirected), preceded by a '#' header line.
void WriteEdgeList(const Graph& g, std::ostream& out);
// The same lines without the header, joined by ';': the text of the inline
// topology kind "edges:..." (topology/factory.h).
std::string InlineEdgeList(const Graph& g);
// Graphviz: "graph" with "--" or "digraph" with "->"; weights as labels when given.
void WriteDot(const Graph& g, const MixingMatrix* weights, std::ostream& out);
// {"nodes": n, "directed": b, "edges": [[u, v], ...]} (or [u, v, w] with weights).
void WriteJson(const Graph& g, const MixingMatrix* weights, std::ostream& out);

}  // namespace murmur::topology
