// Graph partition by METIS (cmake/MurmurMetis.cmake).
#include <metis.h>

#include <algorithm>
#include <limits>
#include <string>

#include "core/check.h"
#include "sim/metis/metis.h"

namespace murmur::sim::metis {

bool Available() { return true; }

Result<std::vector<int>> Partition(const topology::Graph& graph, int parts, std::uint64_t seed) {
  MURMUR_CHECK(parts >= 1);
  const NodeId n = graph.num_nodes();
  std::vector<int> part(n, 0);
  if (parts == 1 || n == 0) return part;
  if (static_cast<NodeId>(parts) >= n) {  // a node per part: nothing to choose
    for (NodeId i = 0; i < n; ++i) part[i] = static_cast<int>(i);
    return part;
  }
  // METIS wants every edge in both endpoints' lists, without self-loops.
  const topology::Graph reversed = graph.directed() ? graph.Reversed() : topology::Graph();
  std::vector<idx_t> xadj(static_cast<std::size_t>(n) + 1, 0);
  std::vector<idx_t> adjncy;
  std::vector<NodeId> row;
  for (NodeId u = 0; u < n; ++u) {
    row.assign(graph.Neighbors(u).begin(), graph.Neighbors(u).end());
    if (graph.directed()) {
      row.insert(row.end(), reversed.Neighbors(u).begin(), reversed.Neighbors(u).end());
      std::sort(row.begin(), row.end());
      row.erase(std::unique(row.begin(), row.end()), row.end());
    }
    for (NodeId v : row)
      if (v != u) adjncy.push_back(static_cast<idx_t>(v));
    if (adjncy.size() > static_cast<std::size_t>(std::numeric_limits<idx_t>::max()))
      return Status::InvalidArgument("the topology has too many edges for METIS's 32-bit indices");
    xadj[u + 1] = static_cast<idx_t>(adjncy.size());
  }
  if (adjncy.empty()) {  // no edges: nothing to keep together, so even blocks
    for (NodeId i = 0; i < n; ++i)
      part[i] = static_cast<int>(static_cast<std::uint64_t>(i) * static_cast<std::uint64_t>(parts) / n);
    return part;
  }
  idx_t nvtxs = static_cast<idx_t>(n), ncon = 1, nparts = parts, cut = 0;
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = static_cast<idx_t>(seed & 0x7FFFFFFF);
  options[METIS_OPTION_UFACTOR] = 30;  // parts within 3% of n / parts
  std::vector<idx_t> where(n);
  const int rc = METIS_PartGraphKway(&nvtxs, &ncon, xadj.data(), adjncy.data(), nullptr, nullptr, nullptr,
                                     &nparts, nullptr, nullptr, options, &cut, where.data());
  if (rc != METIS_OK)
    return Status::Internal("METIS could not partition the topology (METIS_PartGraphKway returned " +
                            std::to_string(rc) + ")");
  for (NodeId i = 0; i < n; ++i) part[i] = static_cast<int>(where[i]);
  return part;
}

}  // namespace murmur::sim::metis
