// CheckSameMetrics: two runs' evaluation points agree in every CSV column
// but wall time, the one column that measures the host.
#pragma once

#include <doctest/doctest.h>

#include "sim/run/metrics.h"
#include "sim/run/run_summary.h"

namespace murmur::sim {

inline void CheckSameMetrics(const RunSummary& a, const RunSummary& b) {
  REQUIRE(a.points.size() == b.points.size());
  for (std::size_t i = 0; i < a.points.size(); ++i) {
    EvalPoint x = a.points[i], y = b.points[i];
    x.wall_s = y.wall_s = 0;
    CAPTURE(i);
    CHECK(CsvRow(x) == CsvRow(y));
  }
}

}  // namespace murmur::sim
