#include "topology/measured.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace murmur::topology {

namespace {

constexpr double kMaxRttMs = 1e7;

struct Row {
  std::uint64_t from = 0, to = 0;
  double rtt_ms = 0, mbps = 0;
};

bool ParseNumber(const std::string& field, double* out) {
  std::size_t used = 0;
  try {
    *out = std::stod(field, &used);
  } catch (...) {
    return false;
  }
  return used == field.size() && std::isfinite(*out) && *out >= 0;
}

bool ParseId(const std::string& field, std::uint64_t* out) {
  if (field.empty() || field.find_first_not_of("0123456789") != std::string::npos || field.size() > 9)
    return false;
  *out = std::stoull(field);
  return true;
}

}  // namespace

Result<MeasuredLinks> ReadMeasuredLinks(const std::string& path, std::uint32_t nodes_hint) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("measured links '" + path + "': cannot be read");
  std::vector<Row> rows;
  std::uint64_t largest = 0;
  std::string line;
  for (std::size_t lineno = 1; std::getline(in, line); ++lineno) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#' || line.rfind("from,", 0) == 0) continue;
    auto bad = [&](const std::string& why) {
      return Status::InvalidArgument("measured links '" + path + "' line " + std::to_string(lineno) + ": " +
                                     why);
    };
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string field; std::getline(ss, field, ',');) f.push_back(field);
    if (f.size() < 3 || f.size() > 4) return bad("expected from,to,rtt_ms[,mbps], got '" + line + "'");
    Row r;
    if (!ParseId(f[0], &r.from) || !ParseId(f[1], &r.to)) return bad("node ids must be integers");
    if (r.from >= kMaxMeasuredNodes || r.to >= kMaxMeasuredNodes)
      return bad("node id over the " + std::to_string(kMaxMeasuredNodes) + " accepted");
    if (r.from == r.to) return bad("node " + f[0] + " paired with itself");
    if (!ParseNumber(f[2], &r.rtt_ms) || r.rtt_ms > kMaxRttMs)
      return bad("round trip '" + f[2] + "' is not a number of ms in [0, 1e7]");
    if (f.size() == 4 && (!ParseNumber(f[3], &r.mbps) || (r.mbps != 0 && (r.mbps < 1e-6 || r.mbps > 1e9))))
      return bad("throughput '" + f[3] +
                 "' is neither 0 (not measured) nor a number of Mbit/s in [1e-6, 1e9]");
    largest = std::max({largest, r.from, r.to});
    rows.push_back(r);
  }
  if (rows.empty())
    return Status::InvalidArgument(
        "measured links '" + path +
        "': no rows (expected from,to,rtt_ms[,mbps] lines, as murmur peers --rtt-csv writes them)");
  MeasuredLinks m;
  m.nodes = std::max<std::uint32_t>(nodes_hint, static_cast<std::uint32_t>(largest + 1));
  for (const Row& r : rows) m.pairs[r.from << 32 | r.to] = MeasuredLink{r.rtt_ms, r.mbps};
  return m;
}

PairCost MeasuredCost(const MeasuredLinks& links, double bits) {
  return [&links, bits](NodeId u, NodeId v) {
    const MeasuredLink* l = links.Find(u, v);
    if (l == nullptr) l = links.Find(v, u);
    if (l == nullptr) return kUnmeasuredSeconds;
    double seconds = l->rtt_ms / 2000.0;
    if (l->mbps > 0) seconds += bits / (l->mbps * 1e6);
    return seconds;
  };
}

}  // namespace murmur::topology
