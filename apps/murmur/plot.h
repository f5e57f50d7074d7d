// Plots of simulation metrics, drawn by gnuplot (Debian: gnuplot-nox) run as
// a separate program: accuracy versus rounds and versus megabytes sent.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "sim/metrics.h"

namespace murmur::cli {

// One curve per run; `labels` names them. Writes a PNG to `png_path`.
Status PlotMetrics(const std::vector<std::vector<sim::EvalPoint>>& runs,
                   const std::vector<std::string>& labels, const std::string& png_path);

}  // namespace murmur::cli
