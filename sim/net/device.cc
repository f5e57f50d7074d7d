#include "sim/net/device.h"

#include <cmath>
#include <fstream>
#include <sstream>

namespace murmur::sim {

namespace {

struct Range {
  double lo, hi;
};

// Ranges per device class. Compute is sustained training throughput, not
// peak; bandwidths are what a node gets, not the radio's nominal rate. They
// follow the spread FedScale (Lai et al., ICML 2022) reports from real device
// traces (AI Benchmark, MobiPerf): two orders of magnitude between the
// slowest and fastest phones, and uplinks far slower than downlinks.
struct DeviceClass {
  const char* name;
  Range gflops, up_mbps, down_mbps, latency_ms, availability;
};

constexpr DeviceClass kClasses[] = {
    {"iot", {0.5, 2}, {0.1, 1}, {0.5, 5}, {20, 150}, {0.5, 0.9}},
    {"phone", {5, 30}, {2, 20}, {10, 100}, {20, 80}, {0.6, 0.95}},
    {"vehicle", {20, 100}, {5, 30}, {10, 50}, {2, 20}, {0.7, 1.0}},
    {"edge-server", {500, 2000}, {500, 1000}, {500, 1000}, {1, 5}, {1.0, 1.0}},
};

double LogUniform(Rng& rng, Range r) { return std::exp(rng.Uniform(std::log(r.lo), std::log(r.hi))); }

DeviceProfile Draw(const DeviceClass& c, Rng& rng) {
  DeviceProfile p;
  p.flops_per_s = LogUniform(rng, c.gflops) * 1e9;
  p.up_bps = LogUniform(rng, c.up_mbps) * 1e6;
  p.down_bps = LogUniform(rng, c.down_mbps) * 1e6;
  p.latency = Nanos(static_cast<std::int64_t>(rng.Uniform(c.latency_ms.lo, c.latency_ms.hi) * 1e6));
  p.availability = rng.Uniform(c.availability.lo, c.availability.hi);
  p.kind = c.name;
  return p;
}

const DeviceClass* FindClass(const std::string& name) {
  for (const auto& c : kClasses) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

std::string ClassList() {
  std::string out = "uniform";
  for (const auto& c : kClasses) out += std::string(", ") + c.name;
  return out;
}

}  // namespace

const std::vector<std::string>& DeviceClassNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& c : kClasses) v.emplace_back(c.name);
    return v;
  }();
  return names;
}

Result<std::vector<DeviceProfile>> MakeDeviceProfiles(const std::string& spec, std::size_t n,
                                                      std::uint64_t seed) {
  if (spec == "uniform" || spec.empty()) return std::vector<DeviceProfile>(n);
  // Parse "kind" or "kind:w,kind:w".
  std::vector<std::pair<const DeviceClass*, double>> mix;
  std::stringstream ss(spec);
  std::string item;
  double total = 0;
  while (std::getline(ss, item, ',')) {
    std::string name = item;
    double weight = 1;
    if (auto colon = item.find(':'); colon != std::string::npos) {
      name = item.substr(0, colon);
      try {
        std::size_t used = 0;
        weight = std::stod(item.substr(colon + 1), &used);
        if (used != item.size() - colon - 1) throw std::invalid_argument("trailing");
      } catch (const std::exception&) {
        return Status::InvalidArgument("device mix '" + spec + "': weight of '" + name + "' is not a number");
      }
      if (!(weight > 0))
        return Status::InvalidArgument("device mix '" + spec + "': weight of '" + name + "' must be > 0");
    }
    const DeviceClass* c = FindClass(name);
    if (c == nullptr) {
      return Status::InvalidArgument("unknown device class '" + name + "' (known: " + ClassList() + ")");
    }
    mix.emplace_back(c, weight);
    total += weight;
  }
  if (mix.empty()) return Status::InvalidArgument("empty device spec");
  // Assign classes by exact fractions (largest remainder), then shuffle the
  // assignment so classes are not grouped by node id.
  std::vector<const DeviceClass*> assignment;
  assignment.reserve(n);
  double acc = 0;
  std::size_t assigned = 0;
  for (std::size_t k = 0; k < mix.size(); ++k) {
    acc += mix[k].second / total;
    std::size_t upto =
        k + 1 == mix.size() ? n : static_cast<std::size_t>(std::llround(acc * static_cast<double>(n)));
    for (; assigned < upto; ++assigned) assignment.push_back(mix[k].first);
  }
  Rng shuffle_rng(seed, 0, RngPurpose::kDevice);
  shuffle_rng.Shuffle(std::span<const DeviceClass*>(assignment));
  std::vector<DeviceProfile> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    Rng rng(seed, i + 1, RngPurpose::kDevice);
    out[i] = Draw(*assignment[i], rng);
  }
  return out;
}

namespace {
constexpr double kMaxTraceLatencyMs = 86400e3;
}  // namespace

Result<std::vector<DeviceProfile>> ReadDeviceTrace(const std::string& path, std::size_t n) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("device trace '" + path + "' cannot be opened");
  std::vector<DeviceProfile> out(n);
  std::vector<bool> seen(n, false);
  std::string line;
  std::size_t lineno = 0;
  auto where = [&] { return path + ":" + std::to_string(lineno) + ": "; };
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    if (lineno == 1 && line.rfind("node", 0) == 0) continue;  // header
    std::stringstream ls(line);
    std::string field;
    std::vector<double> v;
    while (std::getline(ls, field, ',')) {
      try {
        std::size_t used = 0;
        v.push_back(std::stod(field, &used));
        if (used != field.size()) throw std::invalid_argument("trailing");
      } catch (const std::exception&) {
        return Status::InvalidArgument(where() + "field '" + field + "' is not a number");
      }
    }
    if (v.size() != 6) {
      return Status::InvalidArgument(
          where() + "expected 6 fields (node,gflops,up_mbps,down_mbps,latency_ms,availability), got " +
          std::to_string(v.size()));
    }
    if (v[0] < 0 || v[0] >= static_cast<double>(n) || v[0] != std::floor(v[0])) {
      return Status::OutOfRange(where() + "node " + std::to_string(v[0]) + " out of range for " +
                                std::to_string(n) + " nodes");
    }
    auto node = static_cast<std::size_t>(v[0]);
    if (seen[node])
      return Status::InvalidArgument(where() + "node " + std::to_string(node) + " listed twice");
    for (int k = 1; k <= 4; ++k) {
      if (!(v[k] > 0) || !std::isfinite(v[k]))
        return Status::InvalidArgument(where() + "values must be positive and finite");
    }
    // A latency becomes integer nanoseconds: a day is far beyond any link and far within range.
    if (v[4] > kMaxTraceLatencyMs)
      return Status::InvalidArgument(where() + "latency_ms " + std::to_string(v[4]) + " is above a day (" +
                                     std::to_string(static_cast<long long>(kMaxTraceLatencyMs)) + " ms)");
    if (!(v[5] > 0 && v[5] <= 1)) return Status::InvalidArgument(where() + "availability must be in (0, 1]");
    seen[node] = true;
    out[node] = DeviceProfile{
        v[1] * 1e9, v[2] * 1e6, v[3] * 1e6, Nanos(static_cast<std::int64_t>(v[4] * 1e6)), v[5], "trace"};
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!seen[i])
      return Status::InvalidArgument(path + ": node " + std::to_string(i) + " is missing from the trace");
  }
  return out;
}

}  // namespace murmur::sim
