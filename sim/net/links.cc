#include "sim/net/links.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <numeric>
#include <sstream>

#include "core/rng.h"

namespace murmur::sim {

namespace {

constexpr double kUnlimited = std::numeric_limits<double>::infinity();

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::stringstream ss(s);
  std::string p;
  while (std::getline(ss, p, sep)) parts.push_back(p);
  return parts;
}

// Rates up to 1e9 Mbit/s and latencies up to an hour: beyond them a value is
// a typo, and nanoseconds would overflow.
constexpr double kMaxMbps = 1e9;
constexpr double kMaxMs = 3.6e6;

Result<double> PositiveNumber(const std::string& text, const std::string& what, bool zero_ok = false,
                              double max = kMaxMbps) {
  try {
    std::size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size() && std::isfinite(v) && (v > 0 || (zero_ok && v == 0)) && v <= max) return v;
  } catch (const std::exception&) {
  }
  std::ostringstream o;
  o << what << " '" << text << "' must be a " << (zero_ok ? "non-negative" : "positive") << " number up to "
    << max;
  return Status::InvalidArgument(o.str());
}

Nanos Milliseconds(double ms) { return Nanos(static_cast<std::int64_t>(std::llround(ms * 1e6))); }

std::string Mbps(double bps) {
  std::ostringstream o;
  o << bps / 1e6 << " Mbit/s";
  return o.str();
}

// S sites of sizes differing by at most one; which node is in which site is
// a shuffle drawn from the seed, so a ring of node ids crosses sites often.
class SiteLinks final : public LinkModel {
 public:
  SiteLinks(NodeId n, std::uint32_t sites, double lan_bps, double wan_bps, Nanos wan_latency,
            std::uint64_t seed)
      : site_(n), sites_(sites), lan_bps_(lan_bps), wan_bps_(wan_bps), wan_latency_(wan_latency) {
    for (NodeId i = 0; i < n; ++i) site_[i] = static_cast<std::uint32_t>(std::uint64_t{i} * sites / n);
    Rng rng(seed, 0, RngPurpose::kLinks);
    rng.Shuffle(std::span<std::uint32_t>(site_));
  }
  double Bps(NodeId a, NodeId b) const override {
    if (!Placed(a, b)) return kUnlimited;
    return site_[a] == site_[b] ? lan_bps_ : wan_bps_;
  }
  Nanos Latency(NodeId a, NodeId b) const override {
    return !Placed(a, b) || site_[a] == site_[b] ? Nanos(0) : wan_latency_;
  }
  std::vector<std::uint32_t> Sites() const override { return site_; }
  std::uint32_t num_sites() const override { return sites_; }
  std::string Describe() const override {
    std::ostringstream o;
    o << sites_ << " sites, " << Mbps(lan_bps_) << " inside, " << Mbps(wan_bps_) << " and "
      << std::chrono::duration<double, std::milli>(wan_latency_).count() << " ms between";
    return o.str();
  }

 private:
  bool Placed(NodeId a, NodeId b) const { return a < site_.size() && b < site_.size(); }

  std::vector<std::uint32_t> site_;
  std::uint32_t sites_;
  double lan_bps_, wan_bps_;
  Nanos wan_latency_;
};

class PlaneLinks final : public LinkModel {
 public:
  PlaneLinks(NodeId n, double fast_bps, double slow_bps, double diagonal_ms, std::uint64_t seed)
      : x_(n), y_(n), fast_bps_(fast_bps), slow_bps_(slow_bps), diagonal_ms_(diagonal_ms) {
    Rng rng(seed, 0, RngPurpose::kLinks);
    for (NodeId i = 0; i < n; ++i) {
      x_[i] = rng.Uniform();
      y_[i] = rng.Uniform();
    }
  }
  double Bps(NodeId a, NodeId b) const override {
    if (a >= x_.size() || b >= x_.size()) return kUnlimited;
    return fast_bps_ * std::pow(slow_bps_ / fast_bps_, Fraction(a, b));
  }
  Nanos Latency(NodeId a, NodeId b) const override {
    if (a >= x_.size() || b >= x_.size()) return Nanos(0);
    return Milliseconds(diagonal_ms_ * Fraction(a, b));
  }
  std::string Describe() const override {
    std::ostringstream o;
    o << "nodes in the unit square, " << Mbps(fast_bps_) << " near to " << Mbps(slow_bps_) << " and "
      << diagonal_ms_ << " ms across";
    return o.str();
  }

 private:
  // Distance over the diagonal's, in [0, 1].
  double Fraction(NodeId a, NodeId b) const {
    return std::hypot(x_[a] - x_[b], y_[a] - y_[b]) / std::sqrt(2.0);
  }

  std::vector<double> x_, y_;
  double fast_bps_, slow_bps_, diagonal_ms_;
};

class TraceLinks final : public LinkModel {
 public:
  struct Path {
    double bps;
    Nanos latency;
  };
  TraceLinks(std::string path, std::unordered_map<std::uint64_t, Path> paths)
      : file_(std::move(path)), paths_(std::move(paths)) {}
  double Bps(NodeId a, NodeId b) const override {
    auto it = paths_.find(Key(a, b));
    return it == paths_.end() ? kUnlimited : it->second.bps;
  }
  Nanos Latency(NodeId a, NodeId b) const override {
    auto it = paths_.find(Key(a, b));
    return it == paths_.end() ? Nanos(0) : it->second.latency;
  }
  std::string Describe() const override {
    return std::to_string(paths_.size()) + " measured paths from " + file_;
  }
  static std::uint64_t Key(NodeId a, NodeId b) {
    return (std::uint64_t{std::min(a, b)} << 32) | std::max(a, b);
  }

 private:
  std::string file_;
  std::unordered_map<std::uint64_t, Path> paths_;
};

Result<std::unique_ptr<LinkModel>> ReadLinkTrace(const std::string& file, NodeId n) {
  std::ifstream in(file);
  if (!in) return Status::NotFound("link trace '" + file + "' cannot be opened");
  std::unordered_map<std::uint64_t, TraceLinks::Path> paths;
  std::string line;
  std::size_t lineno = 0;
  auto where = [&] { return file + ":" + std::to_string(lineno) + ": "; };
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    if (lineno == 1 && line.rfind("a,", 0) == 0) continue;  // header
    const auto f = Split(line, ',');
    if (f.size() != 4)
      return Status::InvalidArgument(where() + "expected 4 fields (a,b,mbps,latency_ms), got " +
                                     std::to_string(f.size()));
    NodeId ends[2];
    for (int k = 0; k < 2; ++k) {
      std::size_t used = 0;
      unsigned long long v = 0;
      try {
        v = std::stoull(f[k], &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != f[k].size() || f[k][0] == '-' || v >= n)
        return Status::OutOfRange(where() + "node '" + f[k] + "' is not a node id below " +
                                  std::to_string(n));
      ends[k] = static_cast<NodeId>(v);
    }
    if (ends[0] == ends[1]) return Status::InvalidArgument(where() + "a path needs two distinct nodes");
    auto mbps = PositiveNumber(f[2], "mbps");
    if (!mbps.ok()) return Status::InvalidArgument(where() + mbps.status().message());
    auto ms = PositiveNumber(f[3], "latency_ms", /*zero_ok=*/true, kMaxMs);
    if (!ms.ok()) return Status::InvalidArgument(where() + ms.status().message());
    if (!paths.emplace(TraceLinks::Key(ends[0], ends[1]), TraceLinks::Path{*mbps * 1e6, Milliseconds(*ms)})
             .second)
      return Status::InvalidArgument(where() + "the path " + f[0] + "-" + f[1] + " is listed twice");
  }
  return std::unique_ptr<LinkModel>(std::make_unique<TraceLinks>(file, std::move(paths)));
}

}  // namespace

Result<std::unique_ptr<LinkModel>> MakeLinkModel(const std::string& spec, NodeId n, std::uint64_t seed) {
  if (spec == "uniform" || spec.empty()) return std::unique_ptr<LinkModel>();
  if (spec.rfind("trace:", 0) == 0) return ReadLinkTrace(spec.substr(6), n);
  const auto p = Split(spec, ':');
  const std::string usage =
      "links '" + spec +
      "': expected uniform, sites:S:LAN_MBPS:WAN_MBPS[:WAN_MS], plane:FAST_MBPS:SLOW_MBPS[:MS] or "
      "trace:FILE.csv";
  if (p[0] == "sites" && (p.size() == 4 || p.size() == 5)) {
    MURMUR_ASSIGN_OR_RETURN(double sites, PositiveNumber(p[1], "links: site count"));
    if (sites != std::floor(sites) || sites > n)
      return Status::InvalidArgument("links: site count '" + p[1] + "' must be a whole number from 1 to " +
                                     std::to_string(n));
    MURMUR_ASSIGN_OR_RETURN(double lan, PositiveNumber(p[2], "links: LAN Mbit/s"));
    MURMUR_ASSIGN_OR_RETURN(double wan, PositiveNumber(p[3], "links: WAN Mbit/s"));
    double ms = 0;
    if (p.size() == 5) {
      MURMUR_ASSIGN_OR_RETURN(ms, PositiveNumber(p[4], "links: WAN ms", true, kMaxMs));
    }
    return std::unique_ptr<LinkModel>(std::make_unique<SiteLinks>(
        n, static_cast<std::uint32_t>(sites), lan * 1e6, wan * 1e6, Milliseconds(ms), seed));
  }
  if (p[0] == "plane" && (p.size() == 3 || p.size() == 4)) {
    MURMUR_ASSIGN_OR_RETURN(double fast, PositiveNumber(p[1], "links: near Mbit/s"));
    MURMUR_ASSIGN_OR_RETURN(double slow, PositiveNumber(p[2], "links: far Mbit/s"));
    double ms = 0;
    if (p.size() == 4) {
      MURMUR_ASSIGN_OR_RETURN(ms, PositiveNumber(p[3], "links: ms across", true, kMaxMs));
    }
    return std::unique_ptr<LinkModel>(std::make_unique<PlaneLinks>(n, fast * 1e6, slow * 1e6, ms, seed));
  }
  return Status::InvalidArgument(usage);
}

double PathSeconds(const LinkModel* links, const std::vector<DeviceProfile>& devices, NodeId a, NodeId b,
                   double bits) {
  const DeviceProfile& src = devices[a];
  const DeviceProfile& dst = devices[b];
  double up = src.up_bps;
  Nanos latency = src.latency + dst.latency;
  if (links != nullptr) {
    up = std::min(up, links->Bps(a, b));
    latency += links->Latency(a, b);
  }
  return bits / up + bits / dst.down_bps + std::chrono::duration<double>(latency).count();
}

}  // namespace murmur::sim
