// Fuzzes the SUMO readers (sim/vehicles/): the input is read as a floating
// car data trace (scanned, then driven as a mobility source over its whole
// time and a step beyond, with one roadside unit standing at a fixed point)
// and as a road network. Any input must yield a result or a Status, never a
// crash, undefined behaviour or unbounded memory; a trace that scans must
// drive without dying, with finite positions for every vehicle present and
// a contact graph over all nodes.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "memfd_input.h"
#include "sim/vehicles/sumo_mobility.h"
#include "sim/vehicles/sumo_net.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace murmur::sim;
  const MemFdInput input("sumo", data, size);
  const std::string& path = input.path();
  if (path.empty()) return 0;
  if (auto j = ReadJunctions(path); j.ok()) {
    if (j->empty()) std::abort();
    for (const Junction& x : *j)
      if (!std::isfinite(x.x) || !std::isfinite(x.y)) std::abort();
  }
  RadioOptions radio;
  radio.radio_range = 50;
  const SumoSource source{path, "", ""};
  if (auto scan = ScanSumo(source, 4, radio); scan.ok()) {
    if (scan->end < scan->begin || scan->unseated > scan->trips) std::abort();
    auto m = SumoMobility::Open(source, 4, radio, *scan);
    if (!m.ok()) std::abort();  // it scanned: it must open
    const double horizon = scan->end + 2 * (scan->step > 0 ? scan->step : 1);
    const double dt = (horizon - scan->begin) / 16 + 1e-3;
    for (double t = scan->begin; t <= horizon; t += dt) {
      (*m)->Advance(t);
      for (murmur::NodeId v = 0; v < 4; ++v)
        if ((*m)->present(v) &&
            (!std::isfinite((*m)->positions()[v].x) || !std::isfinite((*m)->positions()[v].y)))
          std::abort();
      if ((*m)->ContactGraph().num_nodes() != 4) std::abort();
    }
  }
  return 0;
}
