// Fuzzes the simulator's trace readers and its link-model specs (files and
// flags users bring): the input is read as a link trace
// (sim/net/links.h, rows a,b,mbps,latency_ms), as a device trace
// (sim/net/device.h), over 8 nodes, as measured links (topology/measured.h,
// whose costs must be finite and non-negative), and its first line as a
// `links` spec. Any
// input must yield a model or a Status, never a crash or undefined
// behaviour; a model that loads must give every pair a positive rate and a
// non-negative latency, and a device trace positive speeds.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "memfd_input.h"
#include "sim/net/device.h"
#include "sim/net/links.h"
#include "topology/measured.h"

namespace {

constexpr murmur::NodeId kNodes = 8;

void Check(const murmur::sim::LinkModel& m) {
  for (murmur::NodeId a = 0; a < kNodes + 1; ++a) {
    for (murmur::NodeId b = 0; b < kNodes + 1; ++b) {
      if (!(m.Bps(a, b) > 0) || m.Latency(a, b).count() < 0) std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace murmur::sim;
  const std::string text(reinterpret_cast<const char*>(data), size);
  // The first line as a `links` spec (traces name a file: not from here).
  const std::string spec = text.substr(0, text.find('\n'));
  if (spec.rfind("trace:", 0) != 0 && spec.size() < 256) {
    if (auto m = MakeLinkModel(spec, kNodes, 1); m.ok() && *m != nullptr) Check(**m);
  }
  const MemFdInput input("trace", data, size);
  const std::string& path = input.path();
  if (path.empty()) return 0;
  if (auto m = MakeLinkModel("trace:" + path, kNodes, 1); m.ok()) Check(**m);
  if (auto m = murmur::topology::ReadMeasuredLinks(path, kNodes); m.ok()) {
    if (m->nodes < kNodes) std::abort();
    const murmur::topology::PairCost cost = murmur::topology::MeasuredCost(*m, 8e6);
    const murmur::NodeId upto = m->nodes < 64 ? m->nodes : 64;
    for (murmur::NodeId u = 0; u < upto; ++u)
      for (murmur::NodeId v = 0; v < upto; ++v) {
        const double c = cost(u, v);
        if (!(c >= 0) || !std::isfinite(c)) std::abort();
      }
  }
  if (auto d = ReadDeviceTrace(path, kNodes); d.ok()) {
    for (const DeviceProfile& p : *d) {
      if (!(p.flops_per_s > 0 && p.up_bps > 0 && p.down_bps > 0 && p.availability > 0)) std::abort();
    }
  }
  return 0;
}
